export { type AddressParts, normalizeAddress } from './address-name.ts';
export {
  type AddressCreate,
  type AddressListQuery,
  type AddressRouting,
  type AddressUpdate,
  type EmailAddress,
  EmailAddressesService,
  type RoutingTargetDirectory,
} from './email-addresses-service.ts';
