// Customer commands (SERVICE_SPEC part 4, CONTRACT.md): create, update, soft delete.
// Creating and updating read the environment's configuration (which currencies it offers)
// and its UMA index, so they hold the environment; updating also reads which currencies
// the customer has accounts in, so it holds those accounts. Deleting touches the customer only.
// An update that moves a KYC or KYB status in an ENVELOPE environment draws the id of its
// CUSTOMER event here, where the environment (its format) is held.
import {
  decideCreateCustomer,
  decideDeleteCustomer,
  decideUpdateCustomer,
  openedCustomerId,
  type Customer,
  type CustomerInput,
  type CustomerPatch,
} from '../customer.js';
import { notFound } from '../errors.js';
import { newId } from '../../src/engine/ids.js';
import { webhookFormatOf } from '../platform.js';
import { customerStatusEvent } from '../webhook-envelope.js';
import type { DomainCommand, World } from '../world.js';

/** The customer `id` of environment `envId`; a 404 names `field`, where the request gave the id. */
export function customerIn(world: World, envId: string, id: string, field = 'customerId'): Customer {
  const customer = world.customers.inEnv(envId, id);
  if (customer === undefined) throw notFound(field, 'customer', id);
  return customer;
}

export const createCustomer: DomainCommand<{ envId: string; customer: CustomerInput }, Customer> = {
  name: 'customer.create',
  actors: ({ envId }) => [envId],
  decide: ({ envId, customer }, world, at) => {
    const events = decideCreateCustomer(world.envs.get(envId)!, customer, world.customers, at);
    const id = openedCustomerId(events[0]!);
    return { events, reply: () => world.customers.get(id)! };
  },
};

export const updateCustomer: DomainCommand<{ envId: string; customerId: string; patch: CustomerPatch }, Customer> = {
  name: 'customer.update',
  actors: ({ envId, customerId }, world) => [envId, customerIn(world, envId, customerId).id, ...world.internalAccounts.idsOwnedBy(customerId)],
  decide: ({ envId, customerId, patch }, world, at) => {
    const customer = customerIn(world, envId, customerId);
    const currencies = world.internalAccounts.currenciesOwnedBy(customerId);
    const env = world.envs.get(envId)!;
    const events = decideUpdateCustomer(env, customer, patch, currencies, world.customers, at).map((event) =>
      event.type === 'customer.updated' && webhookFormatOf(env.config) === 'ENVELOPE' && customerStatusEvent(customer, event.customer) ? { ...event, webhookId: newId('Webhook', at) } : event,
    );
    return { events, reply: () => world.customers.get(customerId)! };
  },
};

export const deleteCustomer: DomainCommand<{ envId: string; customerId: string }, Customer> = {
  name: 'customer.delete',
  actors: ({ envId, customerId }, world) => [customerIn(world, envId, customerId).id],
  decide: ({ envId, customerId }, world, at) => ({
    events: decideDeleteCustomer(customerIn(world, envId, customerId), at),
    reply: () => world.customers.get(customerId)!,
  }),
};
