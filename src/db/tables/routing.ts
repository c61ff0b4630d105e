/** SQLite only (migration 0014): moves on with every change to what routing reads. One row, id 1. */
export interface RoutingVersionTable {
  id: number;
  version: number;
}
