// Building the page: elements made with the DOM's own calls, every value set as text or as
// an attribute, never parsed as HTML, so a customer named `<img src=x onerror=...>` shows
// those characters and runs nothing (the CSP forbids inline script besides).

import type { SvgNode } from './chart.js';

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  [attribute: string]: string | number | boolean | undefined | ((event: Event) => void);
}

/** `<tag attributes...>children</tag>`; `on*` props are listeners, `false`/`undefined` attributes are left out. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces what `parent` shows. */
export function show(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** An amount in a currency's smallest unit, shown with its decimals (`12345`, 2 → `123.45`). */
export function money(amount: number, decimals: number, code: string): string {
  const negative = amount < 0;
  const digits = String(Math.abs(amount)).padStart(decimals + 1, '0');
  const whole = decimals === 0 ? digits : digits.slice(0, -decimals);
  const fraction = decimals === 0 ? '' : `.${digits.slice(-decimals)}`;
  return `${negative ? '-' : ''}${Number(whole).toLocaleString('en-US')}${fraction} ${code}`;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** A chart's tree (chart.ts) as SVG elements, made with the DOM's own calls like every other element. */
export function svg(tree: SvgNode): SVGElement {
  const element = document.createElementNS(SVG_NS, tree.tag);
  for (const [name, value] of Object.entries(tree.attrs)) if (name !== 'xmlns') element.setAttribute(name, String(value));
  for (const child of tree.children) element.appendChild(typeof child === 'string' ? document.createTextNode(child) : svg(child));
  return element as SVGElement;
}

const GOOD_STATUSES = new Set(['COMPLETED', 'DELIVERED', 'ACTIVE', 'APPROVED', 'UP', 'SUCCEEDED']);
const BAD_STATUSES = new Set(['FAILED', 'REJECTED', 'EXPIRED', 'DOWN', 'CLOSED', 'CANCELLED']);

/** A status as a badge coloured by what it means (done, wrong, or on its way), its text unchanged. */
export function statusBadge(status: string): HTMLElement {
  const tone = GOOD_STATUSES.has(status) ? 'good' : BAD_STATUSES.has(status) ? 'bad' : 'warning';
  return h('span', { class: `status ${tone}` }, status);
}
