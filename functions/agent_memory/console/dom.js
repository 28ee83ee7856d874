// DOM helpers: every text goes in through textContent or attributes, never through innerHTML.

const SVG_NS = "http://www.w3.org/2000/svg";

export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

function setAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

let ids = 0;
export const uid = (prefix) => `${prefix}-${++ids}`;

// A labelled horizontal bar (value in [0, max]); the width is set through the CSSOM, which the CSP allows.
export function bar(label, value, max, { text, warnAt } = {}) {
  const ratio = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  const fill = h("span", { class: "bar-fill" + (warnAt !== undefined && ratio >= warnAt ? " warn" : "") });
  fill.style.width = `${(ratio * 100).toFixed(1)}%`;
  const id = uid("bar");
  return h(
    "div",
    { class: "bar-row" },
    h("span", { class: "bar-label", id }, label),
    h(
      "span",
      {
        class: "bar",
        role: "meter",
        "aria-labelledby": id,
        "aria-valuemin": "0",
        "aria-valuemax": String(max),
        "aria-valuenow": String(value),
      },
      fill,
    ),
    h("span", { class: "bar-value" }, text ?? String(value)),
  );
}

export function table(headers, rows, caption) {
  return h(
    "table",
    {},
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
  );
}

export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toISOString().replace("T", " ").slice(0, 19) + "Z";
}

export function short(text, length = 160) {
  const value = String(text ?? "");
  return value.length > length ? value.slice(0, length - 1) + "…" : value;
}
