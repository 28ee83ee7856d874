// One chat session (`#session:<id>`): its status, the prompt-cache TTLs its turns chose and what it cost,
// from GET /v1/sessions/{id}. There is no listing of sessions: a session id comes from the answer that
// started it (POST /v1/sessions).

import { get } from "./api.js";
import { h, table, when } from "./dom.js";

const TTL_NAMES = { "5m": "5 minutes", "1h": "1 hour" };
const MODES = {
  auto: "auto — chosen per turn from the gaps between turns",
  "5m": "fixed 5 minutes",
  "1h": "fixed 1 hour",
};

function usd(value) {
  return `$${Number(value || 0).toFixed(4)}`;
}

function lookup(ctx) {
  const input = h("input", { id: "session-id", name: "session", required: true, spellcheck: "false", value: ctx.param(), placeholder: "ses_…" });
  const form = h(
    "form",
    { class: "filters", "aria-label": "Open a session" },
    h("span", { class: "field" }, h("label", { for: "session-id" }, "Session id"), input),
    h("button", { type: "submit", class: "secondary" }, "Show"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#session:${encodeURIComponent(input.value.trim())}`;
  });
  return form;
}

function cacheSection(body) {
  const usage = body.usage;
  const turns = Math.max(1, usage.turns);
  const last = body.cache_ttls;
  const share = usage.cost_without_cache_usd > 0 ? (100 * usage.cost_usd) / usage.cost_without_cache_usd : null;
  return h(
    "section",
    { class: "card", "aria-label": "Prompt cache" },
    h("h3", {}, "Prompt cache"),
    h("p", { id: "session-ttl-mode" }, `TTL setting: ${MODES[body.session.cache_ttl] || body.session.cache_ttl}`),
    h(
      "p",
      { id: "session-ttls" },
      last
        ? `Last turn: snapshot cache point ${TTL_NAMES[last.system]}, history cache points ${TTL_NAMES[last.history]}`
        : "No turn through the service's chat yet.",
    ),
    table(
      ["Figure", "Value"],
      [
        ["Turns", String(usage.turns)],
        ["Snapshot at 1 hour", `${usage.snapshot_1h_turns} of ${usage.turns} turns (${Math.round((100 * usage.snapshot_1h_turns) / turns)}%)`],
        ["History at 1 hour", `${usage.history_1h_turns} of ${usage.turns} turns (${Math.round((100 * usage.history_1h_turns) / turns)}%)`],
        ["TTL switches", String(usage.cache_ttl_switches)],
        ["Cache breaks", String(usage.cache_breaks)],
        ["Tokens read from the cache", usage.cache_read_input_tokens.toLocaleString("en")],
        ["Tokens written to the cache", usage.cache_write_input_tokens.toLocaleString("en")],
        ["Tokens sent uncached", usage.input_tokens.toLocaleString("en")],
        ["Cost", usd(usage.cost_usd)],
        ["Cost without caching", usd(usage.cost_without_cache_usd)],
        ["Cost vs no caching", share === null ? "—" : `${share.toFixed(1)}%`],
      ],
      "Session figures (estimated from the model's list prices)",
    ),
  );
}

export async function renderSession(ctx) {
  const id = ctx.param();
  const parts = [h("h2", {}, "Session"), lookup(ctx)];
  if (!id) {
    parts.push(h("p", { class: "hint" }, "Enter the id of a session (POST /v1/sessions answers with it)."));
    return h("div", { class: "page", id: "page-session" }, parts);
  }
  const body = await get(`/v1/sessions/${encodeURIComponent(id)}`);
  const session = body.session;
  parts.push(
    h(
      "section",
      { class: "card", "aria-label": "Session" },
      h("h3", {}, session.id),
      h("p", { class: "meta" }, `${session.namespace} · ${session.status} · started ${when(session.created_at)} · expires ${when(session.expires_at)}`),
      h("p", { class: "meta" }, `Snapshot sha256 ${session.snapshot_sha256}`),
    ),
    cacheSection(body),
  );
  return h("div", { class: "page", id: "page-session" }, parts);
}
