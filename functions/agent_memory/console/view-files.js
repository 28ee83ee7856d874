// The namespace's Markdown memory files, rendered safely, each with its use of the cap.

import { get } from "./api.js";
import { bar, h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

export async function renderFiles(ctx) {
  const namespace = ctx.namespace();
  const files = await Promise.all(["memory", "user"].map((kind) => get(`/v1/files/${kind}`, { namespace })));
  return h(
    "div",
    { class: "page", id: "page-files" },
    h("h2", {}, `Memory files of ${namespace}`),
    files.map((file) =>
      h(
        "section",
        { class: "card file", "aria-label": file.path },
        h("h3", {}, file.path),
        bar("Used of the cap", file.used, file.limit, { text: `${file.used} / ${file.limit} chars`, warnAt: 0.8 }),
        file.text.trim() ? renderMarkdown(file.text) : h("p", { class: "muted" }, "Empty."),
      ),
    ),
  );
}
