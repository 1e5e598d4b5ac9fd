// Compile-time checks that a published schema and the domain type it renders describe the
// same shape: a drift between them fails the build, not a client.

/** The same type with every `readonly` dropped, at every depth: a view's lists are read-only in the domain, not on the wire. */
type Writable<T> = T extends readonly (infer U)[] ? Array<Writable<U>> : T extends object ? { -readonly [K in keyof T]: Writable<T[K]> } : T;

/** Mutual assignability, read-only-ness aside: true when A and B accept exactly the same values. */
export type Same<A, B> = [Writable<A>] extends [Writable<B>] ? ([Writable<B>] extends [Writable<A>] ? true : false) : false;
/** Compiles only for `true`: `Holds<Same<Static<typeof Schema>, DomainType>>`. */
export type Holds<T extends true> = T;
