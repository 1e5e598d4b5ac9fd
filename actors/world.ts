// The domain state machine: the record kinds registered together (see registry.ts). Each
// kind's module owns its records, indexes, snapshot restore and invariants; World only
// names them. `apply` is the only writer and is deterministic in (state, event, entry
// time). Records are replaced, never mutated, so a snapshot can hold references while
// later entries apply. Indexes are not snapshotted; `restore` rebuilds them.
import { Customers, type CustomerEvent } from './customer.js';
import { ExternalAccounts, type ExternalAccountEvent } from './external-account.js';
import { InternalAccounts, type InternalAccountEvent } from './internal-account.js';
import { Lookups, type LookupEvent } from './lookup.js';
import { PlatformEnvs, type PlatformEvent } from './platform.js';
import { Registry } from './registry.js';
import { decideTimer, Wallets, walletIdOf, type WalletEvent, type WalletTimerMessage } from './wallet.js';

export type DomainEvent = PlatformEvent | CustomerEvent | InternalAccountEvent | ExternalAccountEvent | LookupEvent | WalletEvent;

/** Messages that durable timers deliver. The payment issues add theirs here. */
export type TimerMessage = WalletTimerMessage;

export class World extends Registry<DomainEvent, TimerMessage> {
  readonly envs = new PlatformEnvs();
  readonly customers = new Customers();
  readonly internalAccounts = new InternalAccounts();
  readonly externalAccounts = new ExternalAccounts();
  readonly wallets = new Wallets();
  readonly lookups = new Lookups();

  constructor() {
    super();
    this.register(this.envs);
    this.register(this.customers);
    this.register(this.internalAccounts);
    this.register(this.externalAccounts);
    this.register(this.wallets);
    this.register(this.lookups);
  }

  onTimer(message: TimerMessage, at: number): DomainEvent[] {
    // Session and signed-request expiry, held on the wallet's account.
    return decideTimer(this.wallets.get(walletIdOf(message.accountId)), message, at);
  }
}
