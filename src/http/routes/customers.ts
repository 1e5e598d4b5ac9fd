// Customers (SERVICE_SPEC part 4, CONTRACT.md): create, list, read, update, soft delete,
// and POST /users, the older name for create.
import { Type, type Static } from '@sinclair/typebox';
import {
  CUSTOMER_TYPES,
  KYC_STATUSES,
  decideCreateCustomer,
  decideDeleteCustomer,
  decideUpdateCustomer,
  openedCustomerId,
  renderCustomer,
  type Customer,
  type CustomerInput,
} from '../../../actors/customer.js';
import type { PlatformEnv } from '../../../actors/platform.js';
import { ISO_COUNTRIES } from '../../../actors/reference.js';
import type { Services } from '../../services.js';
import { invalidInput, notFound, type FieldProblem } from '../../../actors/errors.js';
import { paginate, PageQuery } from '../pagination.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { AddressSchema, CurrencyCode, CustomerView, Email, IdOf, ListOf, UmaAddress } from '../schemas/resources.js';
import { Country, DateString, List, Obj, Str, StringEnum, validator } from '../validation.js';
import { isoTime } from '../../../actors/iso-time.js';

const Profile = {
  email: Type.Optional(Email),
  fullName: Type.Optional(Str({ minLength: 1, maxLength: 255 })),
  birthDate: Type.Optional(DateString()),
  nationality: Type.Optional(Country()),
  address: Type.Optional(AddressSchema),
};

const CreateCustomer = Obj({
  customerType: StringEnum(CUSTOMER_TYPES),
  platformCustomerId: Type.Optional(Str({ minLength: 1, maxLength: 255 })),
  region: Type.Optional(Country()),
  currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
  umaAddress: Type.Optional(UmaAddress),
  ...Profile,
});

const UpdateCustomer = Obj({
  customerType: StringEnum(CUSTOMER_TYPES),
  region: Type.Optional(Country()),
  currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
  umaAddress: Type.Optional(UmaAddress),
  kycStatus: Type.Optional(StringEnum(KYC_STATUSES)),
  ...Profile,
});

const CreateUser = Obj({
  userType: StringEnum(CUSTOMER_TYPES),
  platformUserId: Type.Optional(Str({ minLength: 1, maxLength: 255 })),
  umaAddress: Type.Optional(UmaAddress),
  region: Type.Optional(Country()),
  currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
  ...Profile,
});

const ListCustomers = Obj({
  platformCustomerId: Type.Optional(Str({ maxLength: 255 })),
  umaAddress: Type.Optional(Str({ maxLength: 255 })),
  region: Type.Optional(Country()),
  isDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});

const CustomerIdParam = validator(Obj({ customerId: IdOf('Customer') }));

/** Checks the schema cannot express: real calendar dates, real country codes. */
function checkProfile(input: { birthDate?: string; nationality?: string; region?: string; address?: { country?: string } }, today: number): void {
  const errors: FieldProblem[] = [];
  if (input.birthDate !== undefined) {
    const parsed = Date.parse(`${input.birthDate}T00:00:00Z`);
    if (Number.isNaN(parsed) || isoTime(parsed).slice(0, 10) !== input.birthDate) {
      errors.push({ field: 'birthDate', message: 'not a calendar date' });
    } else if (parsed > today) {
      errors.push({ field: 'birthDate', message: 'must not be in the future' });
    }
  }
  for (const [field, code] of [
    ['nationality', input.nationality],
    ['region', input.region],
    ['address.country', input.address?.country],
  ] as const) {
    if (code !== undefined && !ISO_COUNTRIES.has(code)) errors.push({ field, message: `${code} is not an ISO 3166-1 alpha-2 country code` });
  }
  if (errors.length > 0) throw invalidInput(errors);
}

/** The customer `id` of this environment; a 404 names `field`, where the request gave the id. */
export function customerOf(services: Services, env: PlatformEnv, id: string, field = 'customerId'): Customer {
  const customer = services.world.customers.inEnv(env.id, id);
  if (customer === undefined) throw notFound(field, 'customer', id);
  return customer;
}

function createCustomer(ctx: RouteContext<unknown, unknown>, input: CustomerInput): Promise<Reply> {
  const { services, env } = ctx;
  checkProfile(input, services.engine.clock.now());
  return ctx.exec([env.id], (at) => {
    const current = services.world.envs.get(env.id)!;
    const events = decideCreateCustomer(current, input, services.world.customers, at);
    const id = openedCustomerId(events[0]!);
    return { events, reply: () => ({ status: 201, body: renderCustomer(services.world.customers.get(id)!) }) };
  });
}

export const customerRoutes: Route[] = [
  route<Static<typeof CreateCustomer>>({
    method: 'POST',
    path: '/customers',
    summary: 'Create a customer and provision its internal accounts',
    tag: 'Customers',
    body: validator(CreateCustomer),
    response: CustomerView,
    status: 201,
    idempotent: true,
    handle: (ctx) => createCustomer(ctx, ctx.body),
  }),
  route<Static<typeof CreateUser>>({
    method: 'POST',
    path: '/users',
    summary: 'Register a user (creates a Customer: platformUserId is platformCustomerId, userType is customerType)',
    tag: 'Customers',
    body: validator(CreateUser),
    response: CustomerView,
    status: 201,
    idempotent: true,
    handle: (ctx) => {
      const { userType, platformUserId, ...rest } = ctx.body;
      const input: CustomerInput = { ...rest, customerType: userType };
      if (platformUserId !== undefined) input.platformCustomerId = platformUserId;
      return createCustomer(ctx, input);
    },
  }),
  route<undefined, Static<typeof ListCustomers>>({
    method: 'GET',
    path: '/customers',
    summary: 'List customers, newest first',
    tag: 'Customers',
    query: validator(ListCustomers, { coerce: true }),
    response: ListOf(CustomerView),
    status: 200,
    handle: async ({ services, env, query }) => {
      await services.engine.settled();
      const uma = query.umaAddress?.toLowerCase();
      const page = paginate(
        services.world.customers.idsIn(env.id),
        query,
        (id) => {
          const c = services.world.customers.get(id)!;
          if (query.platformCustomerId !== undefined && c.platformCustomerId !== query.platformCustomerId) return undefined;
          if (uma !== undefined && c.umaAddress !== uma) return undefined;
          if (query.region !== undefined && c.region !== query.region) return undefined;
          if (query.isDeleted !== undefined && c.isDeleted !== query.isDeleted) return undefined;
          return c;
        },
        renderCustomer,
      );
      return { status: 200, body: page };
    },
  }),
  route({
    method: 'GET',
    path: '/customers/{customerId}',
    summary: 'Read a customer (deleted customers stay readable)',
    tag: 'Customers',
    response: CustomerView,
    status: 200,
    handle: async ({ services, env, params }) => {
      const { customerId } = CustomerIdParam.parse(params);
      await services.engine.settled();
      return { status: 200, body: renderCustomer(customerOf(services, env, customerId)) };
    },
  }),
  route<Static<typeof UpdateCustomer>>({
    method: 'PATCH',
    path: '/customers/{customerId}',
    summary: 'Update a customer; currencies replace the list and new ones get accounts; region is immutable',
    tag: 'Customers',
    body: validator(UpdateCustomer),
    response: CustomerView,
    status: 200,
    handle: (ctx) => {
      const { services, env, body } = ctx;
      const { customerId } = CustomerIdParam.parse(ctx.params);
      customerOf(services, env, customerId);
      checkProfile(body, services.engine.clock.now());
      // The decision reads the environment's configuration (which currencies are offered)
      // and its UMA index, so it holds the environment as well as the customer.
      return ctx.exec([env.id, customerId], (at) => {
        const customer = customerOf(services, env, customerId);
        const held = new Set(services.world.internalAccounts.idsOwnedBy(customerId).map((id) => services.world.internalAccounts.get(id)!.currency));
        const events = decideUpdateCustomer(services.world.envs.get(env.id)!, customer, body, held, services.world.customers, at);
        return { events, reply: () => ({ status: 200, body: renderCustomer(services.world.customers.get(customerId)!) }) };
      });
    },
  }),
  route({
    method: 'DELETE',
    path: '/customers/{customerId}',
    summary: 'Soft-delete a customer: it stays readable with isDeleted true',
    tag: 'Customers',
    response: CustomerView,
    status: 200,
    handle: (ctx) => {
      const { services, env } = ctx;
      const { customerId } = CustomerIdParam.parse(ctx.params);
      customerOf(services, env, customerId);
      return ctx.exec([customerId], (at) => ({
        events: decideDeleteCustomer(customerOf(services, env, customerId), at),
        reply: () => ({ status: 200, body: renderCustomer(services.world.customers.get(customerId)!) }),
      }));
    },
  }),
];
