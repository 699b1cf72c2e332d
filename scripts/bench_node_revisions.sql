-- What migration 0014's node-revision trigger costs: 5,000 nodes' manifests changed in one statement with the
-- trigger off, then on (µs per row), and the request counters' updates, which must write no revision.
-- Run against a scratch database (it adds and removes bench-* nodes): psql -At -f scripts/bench_node_revisions.sql DB
INSERT INTO scheduler_node (name, manifest, unschedulable, alloc_cpu, alloc_memory, alloc_ephemeral, alloc_pods, alloc_scalar, req_cpu, req_memory, req_ephemeral, req_pods, req_scalar, nonzero_cpu, nonzero_memory, used_ports, spec_version, generation, created_at, updated_at)
SELECT 'bench-' || g, jsonb_build_object('apiVersion','v1','kind','Node','metadata',jsonb_build_object('name','bench-'||g,'labels',jsonb_build_object('kubernetes.io/hostname','bench-'||g,'topology.kubernetes.io/zone','z1')),'status','{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}'::jsonb),
 false, 4000, 0, 0, 110, '{}', 0, 0, 0, 0, '{}', 0, 0, '[]', 1, 1, now(), now() FROM generate_series(1, 5000) g;
VACUUM ANALYZE scheduler_node;
CREATE OR REPLACE FUNCTION why_bench(rev int, what text) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  t0 := clock_timestamp();
  IF what = 'manifest' THEN
    UPDATE scheduler_node SET manifest = jsonb_set(manifest, '{metadata,labels,rev}', to_jsonb(rev::text)) WHERE name LIKE 'bench-%';
  ELSE
    UPDATE scheduler_node SET req_cpu = req_cpu + 1 WHERE name LIKE 'bench-%';
  END IF;
  RETURN round((extract(epoch FROM clock_timestamp() - t0) * 1e6 / 5000)::numeric, 1);
END $$;
SELECT 'warm', why_bench(0, 'manifest');
ALTER TABLE scheduler_node DISABLE TRIGGER schedboard_node_revised;
SELECT 'off', why_bench(11, 'manifest');
ALTER TABLE scheduler_node ENABLE TRIGGER schedboard_node_revised;
SELECT 'on', why_bench(12, 'manifest');
SELECT 'counters on', why_bench(0, 'req');
ALTER TABLE scheduler_node DISABLE TRIGGER schedboard_node_revised;
SELECT 'off', why_bench(21, 'manifest');
ALTER TABLE scheduler_node ENABLE TRIGGER schedboard_node_revised;
SELECT 'on', why_bench(22, 'manifest');
SELECT 'counters on', why_bench(0, 'req');
ALTER TABLE scheduler_node DISABLE TRIGGER schedboard_node_revised;
SELECT 'off', why_bench(31, 'manifest');
ALTER TABLE scheduler_node ENABLE TRIGGER schedboard_node_revised;
SELECT 'on', why_bench(32, 'manifest');
SELECT 'counters on', why_bench(0, 'req');
SELECT 'revisions written (warm + 3 x on; none by the counters)', count(*) FROM scheduler_noderevision;
DROP FUNCTION why_bench(int, text);
DELETE FROM scheduler_noderevision; DELETE FROM scheduler_node WHERE name LIKE 'bench-%'; DELETE FROM scheduler_deletednode WHERE name LIKE 'bench-%';
