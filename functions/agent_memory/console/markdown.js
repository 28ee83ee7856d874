// A small, safe Markdown renderer: it builds DOM nodes and puts every piece of text in with textContent,
// so memory content can never become markup. Covers what memory files use: headings, lists, code fences,
// block quotes, paragraphs, inline code, bold, italics and http(s) links.

import { h } from "./dom.js";

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/;

export function inline(text) {
  const nodes = [];
  let rest = text;
  while (rest) {
    const match = INLINE.exec(rest);
    if (!match) {
      nodes.push(rest);
      break;
    }
    if (match.index > 0) nodes.push(rest.slice(0, match.index));
    const token = match[0];
    if (match[1]) nodes.push(h("code", {}, token.slice(1, -1)));
    else if (match[2]) nodes.push(h("strong", {}, inline(token.slice(2, -2))));
    else if (match[3]) nodes.push(h("em", {}, inline(token.slice(1, -1))));
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token);
      nodes.push(
        /^https?:\/\//i.test(href)
          ? h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, label)
          : `${label} (${href})`,
      );
    }
    rest = rest.slice(match.index + token.length);
  }
  return nodes;
}

export function renderMarkdown(text) {
  const root = h("div", { class: "markdown" });
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) root.append(h("p", {}, inline(paragraph.join(" "))));
    paragraph = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^```/.exec(line);
    if (fence) {
      flush();
      const code = [];
      while (++i < lines.length && !/^```/.test(lines[i])) code.push(lines[i]);
      root.append(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = Math.min(6, heading[1].length + 2); // the page's own h1/h2 stay above the file's
      root.append(h(`h${level}`, {}, inline(heading[2])));
      continue;
    }
    const item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      if (paragraph.length) flush();
      const tag = item[1] ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = h(tag);
        root.append(list);
      }
      list.append(h("li", {}, inline(item[3])));
      continue;
    }
    const quote = /^>\s?(.*)$/.exec(line);
    if (quote) {
      flush();
      root.append(h("blockquote", {}, inline(quote[1])));
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    if (list && /^\s+\S/.test(line)) {
      list.lastElementChild.append(" ", ...inline(line.trim()));
      continue;
    }
    list = null;
    paragraph.push(line.trim());
  }
  flush();
  return root;
}
