// Every Redis key the gate uses, from this one module. An effect's keys, its approval's keys and its subject's
// cap share one hash tag, the effect's partition (the payment or customer the money moves on), so each atomic
// script stays inside one Redis Cluster slot. Only the small lookup indexes below live outside any partition.

export type Keys = ReturnType<typeof createKeys>;

const SAFE_PART = /^[A-Za-z0-9_:.-]{1,200}$/;

export function assertPartition(partition: string): string {
  if (!SAFE_PART.test(partition)) {
    throw new Error(`Partition "${partition}" may only use letters, digits and _ : . - (1-200 characters), since it becomes a Redis hash tag.`);
  }
  return partition;
}

export function createKeys(prefix = 'interlock') {
  const tagged = (partition: string) => `${prefix}:{${assertPartition(partition)}}`;
  return {
    prefix,
    /** HASH effect id -> partition. Written once, before the first entry, so any later lookup finds the effect. */
    effectPartitions: `${prefix}:index:effects`,
    /** HASH approval id -> partition. */
    approvalPartitions: `${prefix}:index:approvals`,
    /** SET of partitions that ever held an effect; recovery walks their open-dispatch indexes. */
    partitions: `${prefix}:index:partitions`,
    heartbeat: (workerId: string) => `${prefix}:heartbeat:${workerId}`,
    state: (partition: string, effectId: string) => `${tagged(partition)}:effect:${effectId}:state`,
    entries: (partition: string, effectId: string) => `${tagged(partition)}:effect:${effectId}:entries`,
    open: (partition: string) => `${tagged(partition)}:open`,
    approval: (partition: string, approvalId: string) => `${tagged(partition)}:approval:${approvalId}`,
    approvalReservations: (partition: string, approvalId: string) => `${tagged(partition)}:approval:${approvalId}:reserved`,
    approvalOpen: (partition: string, approvalId: string) => `${tagged(partition)}:approval:${approvalId}:open`,
    subjectCap: (partition: string) => `${tagged(partition)}:cap`,
    subjectCapReservations: (partition: string) => `${tagged(partition)}:cap:reserved`,
  };
}
