// Browse and search: recall with the score breakdown, filtered listing, and one memory's lineage drawn as a
// small SVG graph beside its change log.

import { get, post } from "./api.js";
import { bar, clear, h, short, svg, table, uid, when } from "./dom.js";

const TYPES = ["user_preference", "project_state", "domain_knowledge", "task_action", "episode", "temporary", "correction"];
const STATUSES = ["active", "pending", "archived", "superseded", "quarantined"];
const TIERS = ["short_term", "long_term"];
const enc = encodeURIComponent;

function field(label, input) {
  input.id = input.id || uid("f");
  return h("span", { class: "field" }, h("label", { for: input.id }, label), input);
}

function select(name, values, blank) {
  return h("select", { name }, blank ? h("option", { value: "" }, blank) : null, values.map((v) => h("option", { value: v }, v)));
}

function foundBy(hit) {
  if (hit.vector_rank != null && hit.keyword_rank != null) return "both halves (vector and keyword)";
  if (hit.vector_rank != null) return "vector half";
  if (hit.keyword_rank != null) return "keyword half";
  return "—";
}

function hitCard(hit) {
  const m = hit.memory;
  return h(
    "article",
    { class: "memory hit", "data-id": m.id },
    h("p", { class: "content" }, m.content),
    h("p", { class: "meta" }, `score ${hit.score.toFixed(3)} · ${m.type} · ${m.status} · found by the ${foundBy(hit)}`),
    h(
      "div",
      { class: "scores" },
      bar("relevance", hit.relevance, 1, { text: hit.relevance.toFixed(3) }),
      bar("recency", hit.recency, 1, { text: hit.recency.toFixed(3) }),
      bar("importance", hit.importance, 1, { text: hit.importance.toFixed(3) }),
    ),
    h("p", { class: "meta" }, h("a", { href: `#browse:${enc(m.id)}` }, `Lineage of ${m.id}`)),
  );
}

function searchForm(ctx, results) {
  const query = h("input", { type: "search", name: "query", required: true });
  const k = h("input", { type: "number", name: "k", min: "1", max: "100", value: "10" });
  const mode = select("mode", ["hybrid", "vector", "keyword"]);
  const type = select("type", TYPES, "any type");
  const asOf = h("input", { type: "datetime-local", name: "as_of" });
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Recall" },
    field("Query", query),
    field("Results", k),
    field("Mode", mode),
    field("Type", type),
    field("As of (UTC)", asOf),
    h("button", { type: "submit" }, "Recall"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { query: query.value, namespaces: [ctx.namespace()], k: Number(k.value) || 10, mode: mode.value };
    if (type.value) body.types = [type.value];
    if (asOf.value) body.as_of = asOf.value.length === 16 ? `${asOf.value}:00Z` : `${asOf.value}Z`;
    try {
      const response = await post("/v1/recall", body);
      clear(results, response.results.length ? response.results.map(hitCard) : h("p", { class: "muted" }, "Nothing recalled."));
      ctx.say("");
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}

function listForm(ctx, results) {
  const type = select("type", TYPES, "any type");
  const status = select("status", STATUSES, "any status");
  const tier = select("tier", TIERS, "any tier");
  const form = h("form", { class: "filters", "aria-label": "List memories" }, field("Type", type), field("Status", status), field("Tier", tier), h("button", { type: "submit", class: "secondary" }, "List"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const page = await get("/v1/memories", { namespace: ctx.namespace(), type: type.value, status: status.value, tier: tier.value, limit: 50 });
      clear(
        results,
        page.items.length
          ? table(
              ["Memory", "Type", "Status", "Updated", "Content"],
              page.items.map((m) => [h("a", { href: `#browse:${enc(m.id)}` }, m.id), m.type, m.status, when(m.updated_at), short(m.content, 100)]),
            )
          : h("p", { class: "muted" }, "No memories match."),
      );
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}

// Edges of the lineage: who replaced whom and how (a correction names its predecessor in corrected_from).
function edges(lineage) {
  const byId = new Map(lineage.map((r) => [r.id, r]));
  const found = new Map();
  const add = (from, to, kind) => {
    if (!byId.has(from) || !byId.has(to)) return;
    const key = `${from}>${to}`;
    const corrected = byId.get(to).corrected_from === from;
    if (!found.has(key) || corrected) found.set(key, { from, to, kind: corrected ? "correct" : kind });
  };
  for (const r of lineage) {
    if (r.supersedes) add(r.supersedes, r.id, "supersede");
    if (r.corrected_from) add(r.corrected_from, r.id, "correct");
    if (r.superseded_by) add(r.id, r.superseded_by, "supersede");
    const into = r.metadata && (r.metadata.compacted_into || r.metadata.merged_into);
    if (into) add(r.id, String(into), "merge");
  }
  return [...found.values()];
}

export function lineageGraph(lineage, selected) {
  const ordered = [...lineage].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
  const W = 170, H = 54, GAP = 60, PAD = 12;
  const pos = new Map(ordered.map((r, i) => [r.id, { x: PAD + i * (W + GAP), y: PAD + 14 }]));
  const width = PAD * 2 + ordered.length * W + Math.max(0, ordered.length - 1) * GAP;
  const links = edges(lineage);
  const label = `Lineage of ${selected}: ${ordered.length} versions; ${links.map((e) => `${e.from} ${e.kind} → ${e.to}`).join("; ") || "no links"}`;
  const graph = svg(
    "svg",
    { class: "lineage", role: "img", "aria-label": label, viewBox: `0 0 ${width} ${H + PAD * 2 + 28}`, width, height: H + PAD * 2 + 28 },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))),
  );
  links.forEach((e, i) => {
    const a = pos.get(e.from), b = pos.get(e.to);
    const forward = a.x < b.x;
    const x1 = forward ? a.x + W : a.x, x2 = forward ? b.x : b.x + W;
    const y = a.y + H / 2 + (i % 2 ? 8 : -8);
    graph.append(
      svg("path", { d: `M ${x1} ${y} C ${(x1 + x2) / 2} ${y - 30}, ${(x1 + x2) / 2} ${y - 30}, ${x2} ${y}`, class: `edge ${e.kind}`, "marker-end": "url(#arrow)" }),
      svg("text", { x: (x1 + x2) / 2, y: y - 26, class: "edge-label", "text-anchor": "middle" }, e.kind),
    );
  });
  for (const r of ordered) {
    const p = pos.get(r.id);
    graph.append(
      svg(
        "g",
        { class: `node ${r.status}${r.id === selected ? " selected" : ""}`, "data-id": r.id },
        svg("title", {}, `${r.id} (${r.status}): ${r.content}`),
        svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: 6 }),
        svg("text", { x: p.x + 8, y: p.y + 20 }, short(r.id, 21)),
        svg("text", { x: p.x + 8, y: p.y + 40, class: "node-status" }, `${r.status} · v${r.version ?? ""}`),
      ),
    );
  }
  return graph;
}

async function detail(ctx, id) {
  const [memory, history] = await Promise.all([get(`/v1/memories/${enc(id)}`), get(`/v1/memories/${enc(id)}/history`)]);
  return h(
    "section",
    { class: "card", id: "memory-detail", "aria-label": `Memory ${id}` },
    h("h3", {}, `Memory ${id}`),
    h("p", { class: "content" }, memory.content),
    h("p", { class: "meta" }, `${memory.type} · ${memory.tier} · ${memory.status} · valid from ${when(memory.valid_from)}${memory.valid_to ? ` to ${when(memory.valid_to)}` : ""}`),
    h(
      "div",
      { class: "lineage-view" },
      h("figure", {}, lineageGraph(history.lineage, id), h("figcaption", {}, "Lineage: arrows go from a version to the one that replaced it (supersede, correct, merge).")),
      h(
        "div",
        { class: "changes" },
        h("h4", {}, "Change log"),
        table(
          ["When", "Operation", "Memory", "Actor", "Reason"],
          history.changes.map((c) => [when(c.at), c.operation, c.record_id, c.actor, short(c.reason, 80)]),
        ),
      ),
    ),
  );
}

export async function renderBrowse(ctx) {
  const results = h("div", { class: "results", "aria-live": "polite" });
  const id = ctx.param();
  return h(
    "div",
    { class: "page", id: "page-browse" },
    h("h2", {}, `Browse and search ${ctx.namespace()}`),
    id ? await detail(ctx, id) : null,
    h("section", { class: "card" }, h("h3", {}, "Recall"), searchForm(ctx, results), h("h3", {}, "List"), listForm(ctx, results), results),
  );
}
