// A minimal domain for engine tests: named counters. Deterministic, like the real world.
import type { DomainImage, StateMachine } from '../../src/engine/state-machine.js';

export type CounterEvent = { type: 'add'; id: string; n: number };
export type CounterTimer = { type: 'bonus'; id: string; n: number };

export class Counters implements StateMachine<CounterEvent, CounterTimer> {
  readonly values = new Map<string, number>();
  applied = 0;

  apply(event: CounterEvent): void {
    const next = (this.values.get(event.id) ?? 0) + event.n;
    if (next < 0) throw new Error(`counter ${event.id} would go negative`);
    this.values.set(event.id, next);
    this.applied++;
  }

  capture(): DomainImage {
    return [...this.values];
  }

  restore(image: DomainImage): void {
    for (const [id, value] of image) this.values.set(id, value as number);
  }

  checkInvariants(): string[] {
    return [...this.values].filter(([, v]) => v < 0).map(([id, v]) => `${id} is ${v}`);
  }

  onTimer(message: CounterTimer): CounterEvent[] {
    return [{ type: 'add', id: message.id, n: message.n }];
  }
}
