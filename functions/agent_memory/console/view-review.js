// Review queues: pending conflict groups, quarantined memories, heavily reused memories, stale skills and
// the curator's proposals. Each action is one call of a public route; buttons only for a key that may act.

import { ApiError, get, post } from "./api.js";
import { h, short, uid, when } from "./dom.js";

const enc = encodeURIComponent;

function labelled(label, input) {
  const id = input.id || uid("field");
  input.id = id;
  return h("span", { class: input.type === "checkbox" ? "field check" : "field" }, h("label", { for: id }, label), input);
}

function memoryCard(memory, ...extra) {
  return h(
    "article",
    { class: "memory", "data-id": memory.id },
    h("p", { class: "content" }, memory.content),
    h(
      "p",
      { class: "meta" },
      `${memory.type} · ${memory.tier} · ${memory.status} · score ${Number(memory.score).toFixed(2)} · created ${when(memory.created_at)}`,
    ),
    memory.status_reason ? h("p", { class: "meta" }, `Reason: ${memory.status_reason}`) : null,
    h("p", { class: "meta" }, h("a", { href: `#browse:${enc(memory.id)}` }, `History of ${memory.id}`)),
    extra,
  );
}

function section(title, id, count, ...body) {
  return h(
    "section",
    { class: "card queue", id, "aria-labelledby": `${id}-title` },
    h("h3", { id: `${id}-title` }, `${title} `, h("span", { class: "badge" }, String(count))),
    body,
  );
}

function conflicts(ctx, groups) {
  return section(
    "Pending conflict groups",
    "queue-conflicts",
    groups.length,
    groups.length ? null : h("p", { class: "muted" }, "No open conflicts."),
    groups.map((group) => {
      const reason = h("input", { type: "text", maxlength: "500", class: "reason" });
      const boxes = [];
      const cards = group.memories.map((memory) => {
        const box = h("input", { type: "checkbox", value: memory.id, class: "keep" });
        boxes.push(box);
        return memoryCard(memory, ctx.can("write") ? labelled("Keep this one", box) : null);
      });
      const resolve = () => {
        const keep = boxes.filter((b) => b.checked).map((b) => b.value);
        if (!keep.length) return ctx.say("Pick at least one memory to keep.", "error");
        return ctx.act(`Resolved group ${group.group}`, () =>
          post(`/v1/conflicts/${enc(group.group)}/resolve`, { keep, reason: reason.value }),
        );
      };
      return h(
        "div",
        { class: "conflict", "data-group": group.group },
        h("h4", {}, `Group ${group.group}`),
        h("div", { class: "side-by-side" }, cards),
        ctx.can("write")
          ? h("div", { class: "actions" }, labelled("Reason", reason), h("button", { type: "button", class: "resolve", onclick: resolve }, "Resolve: keep the checked, supersede the rest"))
          : null,
      );
    }),
  );
}

function quarantined(ctx, items) {
  return section(
    "Quarantined",
    "queue-quarantine",
    items.length,
    items.length ? null : h("p", { class: "muted" }, "Nothing in quarantine."),
    items.map((memory) => {
      const reason = h("input", { type: "text", maxlength: "500", class: "reason" });
      const release = () =>
        ctx.act(`Released ${memory.id}`, () => post(`/v1/memories/${enc(memory.id)}/restore`, { reason: reason.value || "released by a reviewer" }));
      const reject = () => {
        if (!reason.value.trim()) return ctx.say("Say why the memory is rejected.", "error");
        return ctx.act(`Rejected ${memory.id}`, () => post(`/v1/memories/${enc(memory.id)}/archive`, { reason: reason.value }));
      };
      return memoryCard(
        memory,
        ctx.can("write")
          ? h(
              "div",
              { class: "actions" },
              labelled("Reason", reason),
              h("button", { type: "button", class: "release", onclick: release }, "Release"),
              h("button", { type: "button", class: "reject danger", onclick: reject }, "Reject"),
            )
          : null,
      );
    }),
  );
}

// GET /v1/memories/reused (heavily reused memories) may not exist on every deployment yet.
async function reusedItems(namespace) {
  try {
    return (await get("/v1/memories/reused", { namespace, limit: 20 })).items;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

function reused(ctx, items) {
  if (items === null) {
    return section("Heavily reused", "queue-reused", 0, h("p", { class: "muted" }, "This deployment has no reuse statistics (GET /v1/memories/reused)."));
  }
  return section(
    "Heavily reused",
    "queue-reused",
    items.length,
    items.length ? null : h("p", { class: "muted" }, "No heavily reused memories."),
    items.map((item) => {
      const memory = item.memory;
      const content = h("textarea", { rows: "2", class: "correction" });
      content.value = memory.content;
      const reason = h("input", { type: "text", maxlength: "500", class: "reason" });
      const reviewed = () => ctx.act(`Marked ${memory.id} reviewed`, () => post(`/v1/memories/${enc(memory.id)}/reviewed`, {}));
      const correct = () =>
        ctx.act(`Corrected ${memory.id}`, () => post(`/v1/memories/${enc(memory.id)}/correct`, { content: content.value, reason: reason.value }));
      return memoryCard(
        memory,
        h("p", { class: "meta" }, `Recalled ${item.recalls} times in ${item.sessions} sessions · reviewed ${item.reviewed_at ? when(item.reviewed_at) : "never"}`),
        ctx.can("write")
          ? h(
              "div",
              { class: "actions" },
              h("button", { type: "button", class: "mark-reviewed", onclick: reviewed }, "Mark reviewed"),
              labelled("Corrected text", content),
              labelled("Reason", reason),
              h("button", { type: "button", class: "correct", onclick: correct }, "Correct"),
            )
          : null,
      );
    }),
  );
}

async function skillsSection(ctx, namespace) {
  let stale;
  try {
    stale = (await get("/v1/skills", { namespace, status: "stale" })).skills;
  } catch (error) {
    if (error instanceof ApiError && error.status === 501) return section("Stale skills", "queue-skills", 0, h("p", { class: "muted" }, error.message));
    throw error;
  }
  return section(
    "Stale skills",
    "queue-skills",
    stale.length,
    stale.length ? null : h("p", { class: "muted" }, "No stale skills."),
    stale.map((skill) =>
      h(
        "article",
        { class: "memory" },
        h("p", { class: "content" }, `${skill.name}: ${skill.description}`),
        h("p", { class: "meta" }, `stale since ${when(skill.status_since)} · ${skill.signals.uses} uses · last used ${when(skill.signals.last_used_at)}`),
        ctx.can("write")
          ? h(
              "div",
              { class: "actions" },
              h("button", { type: "button", onclick: () => ctx.act(`Restored skill ${skill.name}`, () => post(`/v1/skills/${enc(skill.name)}/restore`, { namespace, note: "restored in the review console" })) }, "Restore"),
              h("button", { type: "button", class: "secondary", onclick: () => ctx.act(`Archived skill ${skill.name}`, () => post(`/v1/skills/${enc(skill.name)}/archive`, { namespace, note: "archived in the review console" })) }, "Archive"),
            )
          : null,
      ),
    ),
  );
}

function proposalsSection(ctx, namespace) {
  const day = h("input", { type: "date", required: true, value: new Date().toISOString().slice(0, 10) });
  const list = h("div", { class: "proposals", "aria-live": "polite" });
  const load = async () => {
    let run;
    try {
      run = await get("/v1/admin/curator/runs", { namespace, day: day.value });
    } catch (error) {
      list.replaceChildren(h("p", { class: "muted" }, error.message));
      return;
    }
    list.replaceChildren(
      ...(run.proposals.length ? [] : [h("p", { class: "muted" }, "No proposals in that run.")]),
      ...run.proposals.map((proposal) =>
        h(
          "article",
          { class: "memory" },
          h("p", { class: "content" }, `${proposal.kind} ${proposal.skills.join(", ")}: ${proposal.reason}`),
          h("pre", {}, short(proposal.proposed && proposal.proposed.body, 1200)),
          h(
            "div",
            { class: "actions" },
            h("button", { type: "button", onclick: () => ctx.act(`Accepted ${proposal.id}`, () => post("/v1/admin/curator/accept", { namespace, day: day.value, proposal_id: proposal.id })) }, "Accept"),
            h("span", { class: "muted" }, "Leave it to keep the skills as they are."),
          ),
        ),
      ),
    );
  };
  return section(
    "Curator proposals",
    "queue-proposals",
    "admin",
    h("div", { class: "actions" }, labelled("Curator run of", day), h("button", { type: "button", class: "secondary", onclick: load }, "Show proposals")),
    list,
  );
}

export async function renderReview(ctx) {
  const namespace = ctx.namespace();
  const [groups, quarantine, reuse, skills] = await Promise.all([
    get("/v1/conflicts", { namespace }).then((r) => r.conflicts),
    get("/v1/memories", { namespace, status: "quarantined", limit: 100 }).then((r) => r.items),
    reusedItems(namespace),
    skillsSection(ctx, namespace),
  ]);
  return h(
    "div",
    { class: "page", id: "page-review" },
    h("h2", {}, `Review queues of ${namespace}`),
    conflicts(ctx, groups),
    quarantined(ctx, quarantine),
    reused(ctx, reuse),
    skills,
    ctx.can("admin") ? proposalsSection(ctx, namespace) : null,
  );
}
