import type { Flag } from './schema.ts';

export function toFlag(value: boolean): Flag {
  return value ? 1 : 0;
}

export function fromFlag(value: Flag | number | string): boolean {
  return Number(value) === 1;
}
