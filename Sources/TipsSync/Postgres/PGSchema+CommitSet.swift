// Schema 12's set-based commit (issue #47): a loop turn's accounts in one call of fixed shape, whatever their number.

extension PGSchema {
  /// `tipsd.commit_set`: every account of a hosted node's turn (their own operations, history chunks and idempotent
  /// replies; a turn with devices' pushes goes through `tipsd.commit`, one call an account) in a fixed number of
  /// statements — the erased accounts read once, the keys in one `INSERT … ON CONFLICT`, the account rows locked in
  /// account order and their cursors bumped in one `UPDATE … FROM`, the operation rows in one `INSERT`, the history
  /// chunks in one `INSERT` — where `tipsd.commit` ran a PL/pgSQL call, a `tipsd.push` loop and a
  /// `tipsd.append_history` call per chunk for each account.
  ///
  /// Each account's part is `p_*_counts[i]` consecutive items of the flat arrays. One row an account, in the order
  /// given: `tipsd.commit`'s columns after its name. An account erased, or one of whose keys another transaction
  /// committed first (`conflicts`: the stored replies; its own keys taken back), stores nothing; the others are
  /// stored. A statement that fails (an operation's seq stored already, say) rolls everything back: the node then
  /// commits each account alone through `tipsd.commit`, so only the failing account's part is lost (#42).
  static let commitSetFunction = """
        CREATE OR REPLACE FUNCTION tipsd.commit_set(
          p_accounts text[], p_node text, p_op_counts integer[], p_seqs bigint[], p_ops text[],
          p_chunk_counts integer[], p_counts integer[], p_first_ats double precision[], p_last_ats double precision[],
          p_entries bytea[], p_key_counts integer[], p_keys text[], p_replies text[], p_ats double precision[])
          RETURNS TABLE (account text, last_cursor bigint, history_firsts bigint[], devices_last bigint, erased boolean,
            conflicts json, device_clashes bigint[])
          LANGUAGE plpgsql AS $commitset$
        #variable_conflict use_column
        DECLARE
          gone text[];
          clashed text[] := '{}';
          refusals jsonb := '{}';
          ok text[];
          bases jsonb;
          c text;
        BEGIN
          SELECT coalesce(array_agg(a.account), '{}') INTO gone FROM unnest(p_accounts) AS a(account)
            WHERE EXISTS (SELECT 1 FROM tipsd.erased e
              WHERE e.account = a.account AND e.until > now() AND e.reopened_at IS NULL);
          IF coalesce(array_length(p_keys, 1), 0) > 0 THEN
            WITH acc AS (
              SELECT i, p_accounts[i] AS account, p_key_counts[i] AS n,
                coalesce(sum(p_key_counts[i]) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS off
              FROM generate_subscripts(p_accounts, 1) AS i),
            wanted AS (
              SELECT acc.account, p_keys[acc.off + j] AS key, p_replies[acc.off + j] AS reply, p_ats[acc.off + j] AS at
              FROM acc, generate_series(1, acc.n) AS j WHERE acc.account <> ALL (gone)),
            added AS (
              INSERT INTO tipsd.idempotency AS d (account, key, reply, at)
                SELECT w.account, w.key, w.reply, w.at FROM wanted w ORDER BY w.account, w.key
                ON CONFLICT (account, key) DO NOTHING RETURNING d.account)
            SELECT coalesce(array_agg(DISTINCT x.account), '{}') INTO clashed
              FROM (SELECT w.account FROM wanted w EXCEPT ALL SELECT a.account FROM added a) AS x;
            -- Rare: a key another transaction committed. Those accounts' own keys (this transaction's) are taken back.
            FOREACH c IN ARRAY clashed LOOP
              refusals := refusals || jsonb_build_object(c, (
                SELECT coalesce(jsonb_object_agg(s.key, s.reply), '{}') FROM tipsd.idempotency s
                WHERE s.account = c AND s.xmin <> (txid_current() % 4294967296)::text::xid
                  AND s.key = ANY (p_keys)));
              DELETE FROM tipsd.idempotency d WHERE d.account = c AND d.key = ANY (p_keys)
                AND d.xmin = (txid_current() % 4294967296)::text::xid;
            END LOOP;
            IF array_length(clashed, 1) > 0 THEN
              \(durabilityBarrier)
            END IF;
          END IF;
          SELECT coalesce(array_agg(p_accounts[i] ORDER BY p_accounts[i]), '{}') INTO ok
            FROM generate_subscripts(p_accounts, 1) AS i
            WHERE p_accounts[i] <> ALL (gone) AND p_accounts[i] <> ALL (clashed)
              AND (p_op_counts[i] > 0 OR p_chunk_counts[i] > 0);
          IF array_length(ok, 1) > 0 THEN
            INSERT INTO tipsd.accounts (account) SELECT o FROM unnest(ok) AS o ORDER BY o ON CONFLICT (account) DO NOTHING;
            -- Row locks in account order: two nodes committing overlapping accounts never wait in a cycle.
            PERFORM 1 FROM tipsd.accounts a WHERE a.account = ANY (ok) ORDER BY a.account FOR UPDATE;
            WITH acc AS (
              SELECT i, p_accounts[i] AS account, p_op_counts[i] AS ops,
                coalesce(sum(p_op_counts[i]) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS op_off,
                p_chunk_counts[i] AS chunks,
                coalesce(sum(p_chunk_counts[i]) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
                  AS chunk_off
              FROM generate_subscripts(p_accounts, 1) AS i),
            chunk AS (
              SELECT acc.account, j, p_counts[acc.chunk_off + j] AS count, p_first_ats[acc.chunk_off + j] AS first_at,
                p_last_ats[acc.chunk_off + j] AS last_at, p_entries[acc.chunk_off + j] AS entries,
                sum(p_counts[acc.chunk_off + j]) OVER (PARTITION BY acc.account ORDER BY j) AS through
              FROM acc, generate_series(1, acc.chunks) AS j WHERE acc.account = ANY (ok)),
            need AS (
              SELECT acc.account, acc.ops, acc.op_off,
                coalesce((SELECT sum(h.count) FROM chunk h WHERE h.account = acc.account), 0) AS entries
              FROM acc WHERE acc.account = ANY (ok)),
            bumped AS (
              UPDATE tipsd.accounts a SET last_cursor = a.last_cursor + n.ops,
                history_cursor = a.history_cursor + n.entries
              FROM need n WHERE a.account = n.account
              RETURNING a.account, a.last_cursor - n.ops AS op_base, a.history_cursor - n.entries AS history_base,
                n.ops, n.op_off),
            stored AS (
              INSERT INTO tipsd.ops (account, cursor, device, seq, op)
                SELECT b.account, b.op_base + k, p_node, p_seqs[b.op_off + k], p_ops[b.op_off + k]
                FROM bumped b, generate_series(1, b.ops) AS k),
            placed AS (
              INSERT INTO tipsd.history AS h (account, cursor, count, first_at, last_at, entries, arrival)
                SELECT h.account, b.history_base + h.through - h.count + 1, h.count, h.first_at, h.last_at, h.entries,
                  nextval('tipsd.history_arrival')
                FROM chunk h JOIN bumped b ON b.account = h.account ORDER BY h.account, h.j
                RETURNING h.account, h.cursor)
            SELECT jsonb_object_agg(b.account, jsonb_build_object(
                'last', CASE WHEN b.ops > 0 THEN b.op_base + b.ops END,
                'firsts', (SELECT coalesce(jsonb_agg(p.cursor ORDER BY p.cursor), '[]') FROM placed p
                  WHERE p.account = b.account)))
              INTO bases FROM bumped b;
          END IF;
          RETURN QUERY SELECT p_accounts[i],
              (bases -> p_accounts[i] ->> 'last')::bigint,
              CASE WHEN bases ? p_accounts[i] AND p_chunk_counts[i] > 0 THEN
                ARRAY(SELECT jsonb_array_elements_text(bases -> p_accounts[i] -> 'firsts')::bigint) END,
              NULL::bigint,
              p_accounts[i] = ANY (gone),
              CASE WHEN p_accounts[i] = ANY (clashed) THEN (refusals -> p_accounts[i])::json END,
              NULL::bigint[]
            FROM generate_subscripts(p_accounts, 1) AS i ORDER BY i;
        END
        $commitset$;
    """

  /// ``commitSetFunction``'s call (the writer prepares it).
  package static let commitSet = """
    SELECT * FROM tipsd.commit_set($1::text[], $2, $3::integer[], $4::bigint[], $5::text[], $6::integer[],
      $7::integer[], $8::double precision[], $9::double precision[], $10::bytea[], $11::integer[], $12::text[],
      $13::text[], $14::double precision[])
    """
}
