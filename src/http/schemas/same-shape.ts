// Compile-time checks that a published schema and the domain type it renders describe the
// same shape: a drift between them fails the build, not a client.

/** Mutual assignability: true when A and B accept exactly the same values. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compiles only for `true`: `Holds<Same<Static<typeof Schema>, DomainType>>`. */
export type Holds<T extends true> = T;
