// Dreaming: the last recorded runs of the namespace (GET /v1/admin/dream/runs: what each promoted and held
// back, gate by gate, with the six signals of every candidate as bars), and on request a dry run of a day's
// sweep (nothing written). Admin scope.

import { get, post } from "./api.js";
import { bar, clear, h, short, table, uid } from "./dom.js";

const num = (value) => (value === null || value === undefined ? "—" : Number(value).toFixed(3));

function candidate(c) {
  const signals = Object.entries(c.signals || {});
  const gates = Object.entries(c.gates || {});
  return h(
    "article",
    { class: `memory candidate ${c.decision}` },
    h("p", { class: "content" }, short(c.text, 300)),
    h("p", { class: "meta" }, `${c.decision} · ${c.type} · total ${Number(c.total).toFixed(3)} · ${c.reason}`),
    h("div", { class: "scores", "aria-label": "Signals" }, signals.map(([name, value]) => bar(name, Number(value), 1, { text: Number(value).toFixed(3) }))),
    gates.length
      ? table(
          ["Gate", "Value", "Threshold", "Passed"],
          gates.map(([name, g]) => [name, num(g.value), num(g.threshold), g.passed ? "yes" : "no — held back"]),
          "Gates",
        )
      : null,
  );
}

function run(report) {
  const summary = Object.entries(report.summary || {}).filter(([, v]) => typeof v !== "object");
  return h(
    "section",
    { class: "card", "aria-label": `Dreaming run ${report.run_id}` },
    h("h3", {}, `Run of ${report.day} (${report.dry_run ? "dry run" : report.status})`),
    h("p", { class: "meta" }, summary.map(([k, v]) => `${k}: ${v}`).join(" · ")),
    report.compacted
      ? h("p", { class: "muted" }, "An older day: retention kept its summary only.")
      : report.candidates.length
        ? report.candidates.map(candidate)
        : h("p", { class: "muted" }, "No candidates."),
  );
}

export async function renderDreaming(ctx) {
  const namespace = ctx.namespace();
  const out = h("div", { "aria-live": "polite", id: "dream-explained" });
  const page = h("div", { class: "page", id: "page-dreaming" }, h("h2", {}, `Dreaming in ${namespace}`));
  if (!ctx.can("admin")) {
    page.append(h("p", { class: "muted" }, "The dreaming report needs a key with the admin scope."));
    return page;
  }
  const recorded = h("div", { "aria-live": "polite", id: "dream-runs" });
  try {
    const response = await get("/v1/admin/dream/runs", { namespace, limit: 5 });
    clear(
      recorded,
      response.runs.length
        ? response.runs.map(run)
        : h("p", { class: "muted" }, "No sweep has run in this namespace yet."),
    );
  } catch (error) {
    ctx.fail(error);
  }
  const explain = h("input", { type: "number", min: "1", max: "1000", value: "50", id: uid("explain") });
  const day = h("input", { type: "date", required: true, value: new Date().toISOString().slice(0, 10), id: uid("day") });
  const load = async () => {
    try {
      const body = { namespace, dry_run: true, explain: Number(explain.value) || 50 };
      if (day.value) body.day = day.value;
      const response = await post("/v1/admin/dream", body);
      clear(out, response.runs.map(run));
    } catch (error) {
      ctx.fail(error);
    }
  };
  page.append(
    h("h3", {}, "Last runs"),
    recorded,
    h("h3", {}, "Explain a sweep"),
    h("p", {}, "Shows what the day's sweep would promote and what it would hold back, gate by gate, with the six signals of each candidate. A dry run: nothing is written."),
    h(
      "div",
      { class: "actions" },
      h("label", { for: day.id }, "Sweep day (UTC)"),
      day,
      h("label", { for: explain.id }, "Candidates to explain"),
      explain,
      h("button", { type: "button", class: "explain", onclick: load }, "Explain the sweep"),
    ),
    out,
  );
  return page;
}
