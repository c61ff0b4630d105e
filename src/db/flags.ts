/** A boolean column: both databases store 0 or 1. */
export type Flag = 0 | 1;

export function toFlag(value: boolean): Flag {
  return value ? 1 : 0;
}

export function fromFlag(value: Flag | number | string): boolean {
  return Number(value) === 1;
}
