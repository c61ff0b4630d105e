/**
 * Reads a JSON text column (JSON is stored as text on both databases). A null column, or text that is not JSON,
 * gives the fallback rather than failing the whole read.
 */
export function fromJson<T>(text: string | null, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
