/**
 * A URL's host as a name or a bare IP address. URL keeps an IPv6 literal in brackets (`[::1]`), which resolvers,
 * sockets and isIP do not take.
 */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
