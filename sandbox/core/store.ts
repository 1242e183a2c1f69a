// The sandbox's memory: one collection per Stripe object type, kept in creation order so lists can be served
// newest first, plus side tables for state Stripe does not show (for example which test card made a charge).
export interface StripeObject {
  id: string;
  object: string;
  created: number;
}

export interface Collection<T extends StripeObject> {
  readonly name: string;
  insert(object: T): T;
  get(id: string): T | undefined;
  /** Newest first, as every Stripe list is. */
  newestFirst(): T[];
  remove(id: string): void;
}

export interface SideTable<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
}

export interface Store {
  collection<T extends StripeObject>(name: string): Collection<T>;
  sideTable<V>(name: string): SideTable<V>;
  /** Any stored object by id, whatever its type; used by `expand`. */
  find(id: string): StripeObject | undefined;
  clear(): void;
}

export function createStore(): Store {
  const collections = new Map<string, Map<string, StripeObject>>();
  const sideTables = new Map<string, Map<string, unknown>>();

  const mapFor = (name: string): Map<string, StripeObject> => {
    let map = collections.get(name);
    if (map === undefined) {
      map = new Map();
      collections.set(name, map);
    }
    return map;
  };

  return {
    collection<T extends StripeObject>(name: string): Collection<T> {
      // Each collection holds only objects inserted through this typed handle, so reads narrow back to T.
      const map = mapFor(name) as Map<string, T>;
      return {
        name,
        insert: (object) => {
          map.set(object.id, object);
          return object;
        },
        get: (id) => map.get(id),
        newestFirst: () => [...map.values()].reverse(),
        remove: (id) => {
          map.delete(id);
        },
      };
    },
    sideTable<V>(name: string): SideTable<V> {
      let table = sideTables.get(name);
      if (table === undefined) {
        table = new Map();
        sideTables.set(name, table);
      }
      const typed = table as Map<string, V>;
      return { get: (key) => typed.get(key), set: (key, value) => void typed.set(key, value) };
    },
    find(id) {
      for (const map of collections.values()) {
        const found = map.get(id);
        if (found !== undefined) return found;
      }
      return undefined;
    },
    clear() {
      for (const map of collections.values()) map.clear();
      for (const table of sideTables.values()) table.clear();
    },
  };
}

/**
 * Ids of objects of type `object` that were deleted yet still retrieve, as `{id, object, deleted: true}` (customers):
 * removed from their collection, they are still ids Stripe knows.
 */
export function deletedIds(store: Store, object: string): SideTable<true> {
  return store.sideTable<true>(`${object}.deleted`);
}
