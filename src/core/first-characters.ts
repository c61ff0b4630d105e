/**
 * The first `count` characters of `text`, counted in code points as PostgreSQL's `left` and SQLite's `substr` count
 * them. Cutting UTF-16 units (`slice`) can split an emoji's surrogate pair and leave a lone half.
 */
export function firstCharacters(text: string, count: number): string {
  // A UTF-16 string of at most `count` units holds at most `count` code points.
  if (text.length <= count) return text;
  let units = 0;
  for (let seen = 0; seen < count && units < text.length; seen++) {
    const code = text.charCodeAt(units);
    units += code >= 0xd800 && code <= 0xdbff && units + 1 < text.length ? 2 : 1;
  }
  return text.slice(0, units);
}
