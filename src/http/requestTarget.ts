/**
 * The request target of an HTTP/1.1 request line as a URL. An origin-form target is a path even when
 * it starts with "//": read as a URL reference, `//x/y` names the host x (and `//` none at all, an
 * Invalid URL). The agent answered `GET //` with a 500 and the dashboard served `//evil/api/overview`
 * as /api/overview until the route fuzzers (test/fuzz) found them.
 */
export const requestTargetUrl = (target: string): URL | undefined => {
  try {
    return target.startsWith("/") ? new URL(`http://target${target}`) : new URL(target)
  } catch {
    return undefined
  }
}
