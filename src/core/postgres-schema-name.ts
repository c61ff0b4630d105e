/**
 * The longest PostgreSQL schema name Mailroom can use: its NOTIFY channels are `mailroom_<what>_<schema>`, a channel
 * name holds at most 63 bytes, and the longest prefix (`mailroom_deliveries_`) takes 20.
 */
export const MAX_SCHEMA_NAME_BYTES = 43;
