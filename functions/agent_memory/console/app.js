// The review console: connects with an API key, asks /v1/whoami what the key may do, and shows one page at a
// time. Action buttons are drawn only for a key with the scope the action needs; the API refuses them anyway.

import { ApiError, get, session } from "./api.js";
import { clear, h } from "./dom.js";
import { renderBrowse } from "./view-browse.js";
import { renderDreaming } from "./view-dreaming.js";
import { renderFiles } from "./view-files.js";
import { renderOverview } from "./view-overview.js";
import { renderReview } from "./view-review.js";
import { renderSession } from "./view-session.js";

const PAGES = {
  overview: renderOverview,
  review: renderReview,
  browse: renderBrowse,
  files: renderFiles,
  dreaming: renderDreaming,
  session: renderSession,
};

const state = { who: null };

export const ctx = {
  namespace: () => session.namespace(),
  // What follows the page's name in the hash (`#browse:<memory id>`), decoded; "" when nothing does.
  param: () => decodeURIComponent(location.hash.replace(/^#[a-z]+:?/, "")),
  can: (scope) => Boolean(state.who && state.who.scopes.includes(scope)),
  say(message, kind = "info") {
    const status = document.getElementById("status");
    clear(status, message ? h("p", { class: `note ${kind}` }, message) : null);
  },
  fail(error) {
    const message = error instanceof ApiError ? `${error.message} (${error.status} ${error.code})` : String(error);
    ctx.say(message, "error");
  },
  // Run an action, report its outcome, then redraw the page from the API.
  async act(label, action) {
    try {
      await action();
      ctx.say(`${label}: done`, "ok");
    } catch (error) {
      ctx.fail(error);
      return;
    }
    await show(false);
  },
};

function currentPage() {
  const name = location.hash.replace(/^#/, "").split(":")[0];
  return Object.hasOwn(PAGES, name) ? name : "overview";
}

async function show(clearStatus = true) {
  const main = document.getElementById("main");
  const page = currentPage();
  for (const link of document.querySelectorAll(".tabs a")) {
    if (link.dataset.page === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!state.who) return;
  if (clearStatus) ctx.say("");
  main.setAttribute("aria-busy", "true");
  try {
    const content = await PAGES[page](ctx);
    clear(main, content);
  } catch (error) {
    ctx.fail(error);
  } finally {
    main.removeAttribute("aria-busy");
  }
}

async function connect() {
  const whoami = document.getElementById("whoami");
  try {
    state.who = await get("/v1/whoami");
  } catch (error) {
    state.who = null;
    clear(whoami);
    ctx.fail(error);
    return;
  }
  const who = state.who;
  document.body.dataset.scopes = who.scopes.join(" ");
  clear(
    whoami,
    `Tenant ${who.tenant} · key ${who.key_id} · scopes: ${who.scopes.join(", ") || "none"} · namespaces: ${who.namespaces.join(", ")}`,
    ctx.can("write") ? "" : h("strong", { class: "readonly" }, " · read-only: no actions"),
  );
  clear(
    document.getElementById("namespace-patterns"),
    who.namespaces.filter((p) => !p.includes("*")).map((p) => h("option", { value: p })),
  );
  await show();
}

function start() {
  const form = document.getElementById("connect");
  const keyInput = document.getElementById("api-key");
  const nsInput = document.getElementById("namespace");
  keyInput.value = session.key();
  nsInput.value = session.namespace();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    session.save(keyInput.value.trim(), nsInput.value.trim());
    connect();
  });
  document.getElementById("forget").addEventListener("click", () => {
    session.forget();
    keyInput.value = "";
    state.who = null;
    clear(document.getElementById("whoami"));
    clear(document.getElementById("main"), h("p", { class: "hint" }, "Key forgotten."));
  });
  window.addEventListener("hashchange", () => show());
  if (session.key() && session.namespace()) connect();
}

start();
