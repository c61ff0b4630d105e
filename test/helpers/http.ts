export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** A bound fetch for one server and one key: `api.get('/api/v2/domains')`, `api.post(path, json)`. */
export function apiClient(baseUrl: string, apiKey?: string) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    init: { headers?: Record<string, string>; raw?: string | FormData | URLSearchParams } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
    let payload: BodyInit | undefined;
    if (init.raw !== undefined) payload = init.raw;
    else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...headers, ...init.headers },
      body: payload,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: response.status, body: parsed as T, headers: response.headers };
  }
  return {
    call,
    get: <T = any>(path: string, init?: Parameters<typeof call>[3]) => call<T>('GET', path, undefined, init),
    post: <T = any>(path: string, body?: unknown, init?: Parameters<typeof call>[3]) =>
      call<T>('POST', path, body, init),
    put: <T = any>(path: string, body?: unknown, init?: Parameters<typeof call>[3]) => call<T>('PUT', path, body, init),
    patch: <T = any>(path: string, body?: unknown, init?: Parameters<typeof call>[3]) =>
      call<T>('PATCH', path, body, init),
    delete: <T = any>(path: string, init?: Parameters<typeof call>[3]) => call<T>('DELETE', path, undefined, init),
  };
}

export type ApiClient = ReturnType<typeof apiClient>;
