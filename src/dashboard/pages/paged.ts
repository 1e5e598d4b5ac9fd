// A table over one of the API's paged lists, with Previous and Next buttons that follow its
// cursors. The API's cursors only go forward, so the pager keeps the cursor of every page it
// has shown to go back.
import { describe, type Page } from '../api.js';
import { h, show } from '../dom.js';

export interface PagedList<T> {
  /** What the list holds, in the buttons' names ("Next page of customers"). */
  noun: string;
  /** Reads the page at `cursor` (undefined: the first). */
  read(cursor: string | undefined): Promise<Page<T>>;
  /** The table showing a page's items. */
  table(items: readonly T[]): HTMLElement;
}

/** Shows the list's first page in `container`, and the pages the buttons ask for. */
export async function showPaged<T>(container: HTMLElement, list: PagedList<T>): Promise<void> {
  /** The cursor of each page shown so far, the first page's being undefined; the last is the current page's. */
  const cursors: Array<string | undefined> = [undefined];
  const load = async (): Promise<void> => {
    try {
      const page = await list.read(cursors[cursors.length - 1]);
      const previous = h('button', { type: 'button', 'aria-label': `Previous page of ${list.noun}`, disabled: cursors.length === 1 }, 'Previous');
      const next = h('button', { type: 'button', 'aria-label': `Next page of ${list.noun}`, disabled: !page.hasMore || page.nextCursor === undefined }, 'Next');
      previous.addEventListener('click', () => {
        cursors.pop();
        void load();
      });
      next.addEventListener('click', () => {
        cursors.push(page.nextCursor);
        void load();
      });
      show(
        container,
        page.data.length === 0 ? h('p', {}, `No ${list.noun}.`) : list.table(page.data),
        h('p', { class: 'pager' }, previous, ` Page ${cursors.length} · ${page.totalCount} ${list.noun} in all `, next),
      );
    } catch (err) {
      show(container, h('p', { role: 'alert' }, describe(err)));
    }
  };
  await load();
}

/** The query string of the parameters that have a value (`?a=1&b=x`), or '' when none has. */
export function queryOf(parameters: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined && value !== '') query.set(name, value);
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}
