// Overview of one namespace: counts by type, tier and status; each memory file against its cap; recent changes.

import { get } from "./api.js";
import { bar, h, short, table, when } from "./dom.js";

const RECENT = 15;
const CHANGE_PAGES = 20;

function counts(title, values) {
  const entries = Object.entries(values || {}).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  return h(
    "section",
    { class: "card", "aria-label": title },
    h("h3", {}, title),
    entries.length ? entries.map(([name, n]) => bar(name, n, max)) : h("p", { class: "muted" }, "none"),
  );
}

// The change log is oldest first: follow the cursor to its end and keep the last entries.
async function recentChanges(namespace) {
  let cursor;
  let last = [];
  for (let page = 0; page < CHANGE_PAGES; page++) {
    const result = await get("/v1/changes", { namespace, limit: 500, cursor });
    last = [...last, ...result.items].slice(-RECENT);
    cursor = result.next_cursor;
    if (!cursor) break;
  }
  return last.reverse();
}

export async function renderOverview(ctx) {
  const namespace = ctx.namespace();
  const [stats, changes] = await Promise.all([get("/v1/stats", { namespace }), recentChanges(namespace)]);
  const total = Object.values(stats.by_status || {}).reduce((a, b) => a + b, 0);
  const files = Object.entries(stats.files || {}).map(([kind, usage]) =>
    bar(`${kind === "user" ? "USER.md" : "MEMORY.md"} (${usage.entries} entries)`, usage.used, usage.limit, {
      text: `${usage.used} / ${usage.limit} chars (${Math.round((100 * usage.used) / Math.max(1, usage.limit))}%)`,
      warnAt: 0.8,
    }),
  );
  return h(
    "div",
    { class: "page", id: "page-overview" },
    h("h2", {}, `Overview of ${namespace}`),
    h("p", { class: "lead" }, `${total} memories in this namespace.`),
    h("div", { class: "grid" }, counts("By status", stats.by_status), counts("By type", stats.by_type), counts("By tier", stats.by_tier)),
    h("section", { class: "card", "aria-label": "Memory files" }, h("h3", {}, "Memory files against their caps"), files),
    h(
      "section",
      { class: "card", "aria-label": "Recall figures" },
      h("h3", {}, "Recall latency"),
      stats.recall_latency
        ? h(
            "p",
            { id: "recall-latency" },
            `p50 ${stats.recall_latency.p50_ms.toFixed(1)} ms · p95 ${stats.recall_latency.p95_ms.toFixed(1)} ms over the last ${stats.recall_latency.samples} recalls of this namespace (measured by this server since it started).`,
          )
        : h(
            "p",
            { class: "muted", id: "recall-latency" },
            "No recall measured here yet. In AWS the RecallLatency metric and the prompt-cache figures (CacheReadTokens) are on the stack's CloudWatch dashboard.",
          ),
    ),
    h(
      "section",
      { class: "card", "aria-label": "Recent changes" },
      h("h3", {}, "Recent changes"),
      changes.length
        ? table(
            ["When", "Operation", "Memory", "Actor", "Reason"],
            changes.map((c) => [when(c.at), c.operation, h("a", { href: `#browse:${encodeURIComponent(c.record_id)}` }, c.record_id), c.actor, short(c.reason, 80)]),
          )
        : h("p", { class: "muted" }, "No changes yet."),
    ),
  );
}
