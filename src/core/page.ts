/** One page of an account's items, and how many there are in all. */
export interface Page<Item> {
  items: Item[];
  total: number;
}
