-- Attempts in flight are the leased deliveries: every claim counts them per
-- organization and endpoint to keep each within its bounds. A lease ends
-- (NULL) when its delivery is saved, so this index holds only the few rows
-- in flight (and the odd one whose worker died).
CREATE INDEX deliveries_leased ON deliveries (lease_until, namespace, endpoint) WHERE lease_until IS NOT NULL;

-- Claiming reads the due deliveries in this order with their organization,
-- endpoint and lease: the index carries them, so a claim reads no row and
-- sorts nothing.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (due_at, namespace, endpoint, delivery_id, lease_until) WHERE due_at IS NOT NULL;
