// Every call of the console goes through the public /v1 routes with the person's API key.
// The key lives in sessionStorage (this tab only, gone when it closes), never in a URL.

const KEY = "agent-memory.api-key";
const NAMESPACE = "agent-memory.namespace";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.error) || "http_error";
  }
}

export const session = {
  key: () => sessionStorage.getItem(KEY) || "",
  namespace: () => sessionStorage.getItem(NAMESPACE) || "",
  save(key, namespace) {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(NAMESPACE, namespace);
  },
  setNamespace(namespace) {
    sessionStorage.setItem(NAMESPACE, namespace);
  },
  forget() {
    sessionStorage.removeItem(KEY);
  },
};

// The page is served at <base>/console; the API's routes are <base>/v1/... (base: the API Gateway stage).
function url(path, query) {
  const target = new URL(path.replace(/^\//, ""), document.baseURI);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") target.searchParams.set(name, String(value));
  }
  return target;
}

export async function api(method, path, { query, body } = {}) {
  const headers = { Authorization: `Bearer ${session.key()}`, Accept: "application/json" };
  const init = { method, headers, credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url(path, query), init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text.slice(0, 200) };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const get = (path, query) => api("GET", path, { query });
export const post = (path, body) => api("POST", path, { body: body || {} });
