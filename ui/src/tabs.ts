// Tabs: each view is built the first time it is opened, then kept, so a
// view's state (an open file, a followed job) survives switching.

import { h } from "./dom";

export function tabs(views: [string, () => HTMLElement][]): HTMLElement {
  const bar = h("nav", { class: "tabs", role: "tablist" });
  const body = h("main", { class: "tab-body" });
  const built = new Map<string, HTMLElement>();
  const select = (name: string) => {
    for (const button of bar.querySelectorAll("button")) button.setAttribute("aria-selected", String(button.dataset.tab === name));
    for (const [key, el] of built) el.hidden = key !== name;
    if (!built.has(name)) {
      const make = views.find(([key]) => key === name)![1];
      const el = make();
      built.set(name, el);
      body.append(el);
    }
  };
  for (const [name] of views) {
    bar.append(h("button", { role: "tab", "data-tab": name, onclick: () => select(name) }, name));
  }
  select(views[0][0]);
  return h("div", { class: "agent-view" }, bar, body);
}
