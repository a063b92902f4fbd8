/** Event shapes the SDK exposes, kept free of runtime imports (isolate-safe). */
export interface Actor {
  type: "user" | "serviceAccount" | "system";
  id: string;
}

export interface AppendInputLike {
  type: string;
  payload: Record<string, unknown>;
  idempotencyKey?: string;
  partitionKey?: string;
  metadata?: Record<string, unknown>;
}

export interface StoredDomainEventLike {
  id: string;
  type: string;
  topic: string;
  cursor: string;
  occurredAt: string;
  payload: Record<string, unknown>;
  correlationId?: string;
  causationId?: string;
}
