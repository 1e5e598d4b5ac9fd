// The domain state machine: every actor's state, the records they own, and the indexes
// derived from them. `apply` is the only writer and is deterministic in (state, event,
// entry time). Records are replaced, never mutated, so a snapshot can hold references
// while later entries apply. Indexes are not snapshotted; `restore` rebuilds them.
import type { DomainImage, StateMachine } from '../src/engine/state-machine.js';
import { lowerBound } from '../src/engine/ids.js';
import { type Customer, type CustomerDirectory, type CustomerEvent } from './customer.js';
import { type ExternalAccount, type ExternalAccountEvent } from './external-account.js';
import { applyInternalAccountEvent, type InternalAccount, type InternalAccountEvent } from './internal-account.js';
import { applyPlatformEvent, type PlatformEnv, type PlatformEvent } from './platform.js';

export type DomainEvent =
  | PlatformEvent
  | { type: 'platform.accounts.created'; accounts: InternalAccount[] }
  | CustomerEvent
  | InternalAccountEvent
  | ExternalAccountEvent;

/** Messages that durable timers deliver. The payment issues add theirs here. */
export type TimerMessage = never;

/** Ids sorted ascending; UUIDv7 ids sort by creation, so this is creation order. */
class SortedIds {
  readonly ids: string[] = [];

  insert(id: string): void {
    const ids = this.ids;
    if (ids.length === 0 || ids[ids.length - 1]! < id) {
      ids.push(id);
      return;
    }
    const at = lowerBound(ids, id);
    if (ids[at] !== id) ids.splice(at, 0, id);
  }
}

function bucket<K>(map: Map<K, SortedIds>, key: K): SortedIds {
  let ids = map.get(key);
  if (ids === undefined) {
    ids = new SortedIds();
    map.set(key, ids);
  }
  return ids;
}

export class World implements StateMachine<DomainEvent, TimerMessage>, CustomerDirectory {
  readonly envs = new Map<string, PlatformEnv>();
  readonly customers = new Map<string, Customer>();
  readonly internalAccounts = new Map<string, InternalAccount>();
  readonly externalAccounts = new Map<string, ExternalAccount>();

  // Derived indexes.
  readonly #tokens = new Map<string, { envId: string; secretHash: string }>();
  readonly #customersByEnv = new Map<string, SortedIds>();
  readonly #umaOwners = new Map<string, string>();
  readonly #references = new Set<string>();
  readonly #internalByEnv = new Map<string, SortedIds>();
  readonly #internalByCustomer = new Map<string, SortedIds>();
  readonly #externalByEnv = new Map<string, SortedIds>();
  readonly #externalByCustomer = new Map<string, SortedIds>();
  readonly #defaultDeposit = new Map<string, string>();

  apply(event: DomainEvent, at: number): void {
    switch (event.type) {
      case 'platform.env.created':
      case 'config.updated': {
        const id = event.type === 'config.updated' ? event.envId : event.env.id;
        const env = applyPlatformEvent(this.envs.get(id), event);
        this.envs.set(env.id, env);
        if (event.type === 'platform.env.created') for (const t of env.tokens) this.#tokens.set(t.tokenId, { envId: env.id, secretHash: t.secretHash });
        return;
      }
      case 'platform.accounts.created':
        for (const account of event.accounts) this.#putInternal(account);
        return;
      case 'customer.created':
      case 'customer.updated': {
        const previous = this.customers.get(event.customer.id);
        if ((previous === undefined) !== (event.type === 'customer.created')) {
          throw new Error(`${event.type} for ${event.customer.id} does not match the state`);
        }
        if (previous !== undefined && previous.umaAddress !== event.customer.umaAddress) {
          this.#umaOwners.delete(umaKey(previous.envId, previous.umaAddress));
        }
        this.#putCustomer(event.customer);
        for (const account of event.accounts) this.#putInternal(account);
        return;
      }
      case 'account.funded': {
        const account = this.internalAccounts.get(event.accountId);
        if (account === undefined) throw new Error(`no account ${event.accountId}`);
        this.internalAccounts.set(account.id, applyInternalAccountEvent(account, event, at));
        return;
      }
      case 'externalAccount.created': {
        if (event.replacesDefault !== undefined) {
          const old = this.externalAccounts.get(event.replacesDefault);
          if (old !== undefined) this.externalAccounts.set(old.id, { ...old, defaultUmaDepositAccount: false, updatedAt: at });
        }
        this.#putExternal(event.account);
        return;
      }
    }
  }

  #putCustomer(customer: Customer): void {
    this.customers.set(customer.id, customer);
    bucket(this.#customersByEnv, customer.envId).insert(customer.id);
    this.#umaOwners.set(umaKey(customer.envId, customer.umaAddress), customer.id);
  }

  #putInternal(account: InternalAccount): void {
    this.internalAccounts.set(account.id, account);
    bucket(this.#internalByEnv, account.envId).insert(account.id);
    if (account.customerId !== '') bucket(this.#internalByCustomer, account.customerId).insert(account.id);
    if (account.fundingReference !== undefined) this.#references.add(account.fundingReference);
  }

  #putExternal(account: ExternalAccount): void {
    this.externalAccounts.set(account.id, account);
    bucket(this.#externalByEnv, account.envId).insert(account.id);
    if (account.customerId !== null) {
      bucket(this.#externalByCustomer, account.customerId).insert(account.id);
      if (account.defaultUmaDepositAccount) this.#defaultDeposit.set(account.customerId, account.id);
    }
  }

  capture(): DomainImage {
    const image: Array<readonly [string, unknown]> = [];
    for (const [id, env] of this.envs) image.push([id, env]);
    for (const [id, c] of this.customers) image.push([id, c]);
    for (const [id, a] of this.internalAccounts) image.push([id, a]);
    for (const [id, a] of this.externalAccounts) image.push([id, a]);
    return image;
  }

  restore(image: DomainImage): void {
    for (const [id, record] of image) {
      if (id.startsWith('Platform:')) {
        const env = record as PlatformEnv;
        this.envs.set(id, env);
        for (const t of env.tokens) this.#tokens.set(t.tokenId, { envId: env.id, secretHash: t.secretHash });
      } else if (id.startsWith('Customer:')) this.#putCustomer(record as Customer);
      else if (id.startsWith('InternalAccount:')) this.#putInternal(record as InternalAccount);
      else if (id.startsWith('ExternalAccount:')) this.#putExternal(record as ExternalAccount);
      else throw new Error(`snapshot holds a record of unknown kind: ${id}`);
    }
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    const flows = new Map<string, { balance: number; net: number }>();
    for (const a of this.internalAccounts.values()) {
      if (!Number.isSafeInteger(a.balance) || a.balance < 0) problems.push(`${a.id} has balance ${a.balance}`);
      if (!this.envs.has(a.envId)) problems.push(`${a.id} belongs to unknown environment ${a.envId}`);
      if (a.customerId !== '' && !this.customers.has(a.customerId)) problems.push(`${a.id} belongs to unknown customer ${a.customerId}`);
      const key = `${a.envId} ${a.currency}`;
      const f = flows.get(key) ?? { balance: 0, net: 0 };
      f.balance += a.balance;
      f.net += a.inflow - a.outflow;
      flows.set(key, f);
    }
    for (const [key, f] of flows) {
      if (f.balance !== f.net) problems.push(`${key}: balances sum to ${f.balance} but inflow minus outflow is ${f.net}`);
    }
    const seenUma = new Set<string>();
    for (const c of this.customers.values()) {
      const key = umaKey(c.envId, c.umaAddress);
      if (seenUma.has(key)) problems.push(`UMA address ${c.umaAddress} is held twice`);
      seenUma.add(key);
    }
    const defaults = new Map<string, number>();
    for (const e of this.externalAccounts.values()) {
      if (e.customerId !== null && e.defaultUmaDepositAccount) defaults.set(e.customerId, (defaults.get(e.customerId) ?? 0) + 1);
    }
    for (const [customerId, n] of defaults) if (n > 1) problems.push(`${customerId} has ${n} default UMA deposit accounts`);
    return problems;
  }

  onTimer(message: TimerMessage): DomainEvent[] {
    // No timer messages exist yet: this is unreachable until a payment issue adds one.
    const none: never = message;
    return none;
  }

  // Directory reads for deciders and routes.

  umaOwner(envId: string, umaAddress: string): string | undefined {
    return this.#umaOwners.get(umaKey(envId, umaAddress));
  }

  referenceTaken(reference: string): boolean {
    return this.#references.has(reference);
  }

  token(tokenId: string): { envId: string; secretHash: string } | undefined {
    return this.#tokens.get(tokenId);
  }

  customerIds(envId: string): readonly string[] {
    return this.#customersByEnv.get(envId)?.ids ?? [];
  }

  internalAccountIds(envId: string): readonly string[] {
    return this.#internalByEnv.get(envId)?.ids ?? [];
  }

  customerAccountIds(customerId: string): readonly string[] {
    return this.#internalByCustomer.get(customerId)?.ids ?? [];
  }

  externalAccountIds(envId: string, customerId?: string): readonly string[] {
    if (customerId !== undefined) return this.#externalByCustomer.get(customerId)?.ids ?? [];
    return this.#externalByEnv.get(envId)?.ids ?? [];
  }

  defaultDepositAccount(customerId: string): ExternalAccount | undefined {
    const id = this.#defaultDeposit.get(customerId);
    const account = id === undefined ? undefined : this.externalAccounts.get(id);
    return account?.defaultUmaDepositAccount === true ? account : undefined;
  }

  /** A record of `envId`, or undefined: records of other environments do not exist for it. */
  customerIn(envId: string, id: string): Customer | undefined {
    const c = this.customers.get(id);
    return c?.envId === envId ? c : undefined;
  }

  internalAccountIn(envId: string, id: string): InternalAccount | undefined {
    const a = this.internalAccounts.get(id);
    return a?.envId === envId ? a : undefined;
  }
}

function umaKey(envId: string, umaAddress: string): string {
  return `${envId} ${umaAddress.toLowerCase()}`;
}
