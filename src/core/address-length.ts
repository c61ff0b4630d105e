/** RFC 5321 section 4.5.3.1: a local part of at most 64 octets, and a whole address of at most 254. */
const MAX_LOCAL_PART_OCTETS = 64;
const MAX_ADDRESS_OCTETS = 254;

/** Whether `local@domain` fits the lengths SMTP allows, counted in UTF-8 octets as SMTPUTF8 sends them. */
export function withinAddressLength(address: string): boolean {
  const local = address.slice(0, address.lastIndexOf('@'));
  return (
    Buffer.byteLength(local, 'utf8') <= MAX_LOCAL_PART_OCTETS &&
    Buffer.byteLength(address, 'utf8') <= MAX_ADDRESS_OCTETS
  );
}
