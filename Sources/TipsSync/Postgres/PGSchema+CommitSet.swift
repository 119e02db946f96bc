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

  /// The set-based commit a hosted node prepares (`--set-based-commit`, #47): what ``commitSetFunction`` does for the
  /// regular turn — no account erased, no key stored before — as one plain statement of data-modifying CTEs, with no
  /// PL/pgSQL call (the profile of a donate load had PostgreSQL spending most of its CPU in PL/pgSQL and the
  /// statements it runs one by one). The keys go in one `INSERT … ON CONFLICT DO NOTHING`; the accounts' cursors are
  /// bumped by one upsert in account order (its row locks taken in that order, so two nodes never wait in a cycle,
  /// and a new account's row made by it; an account with replies alone is locked too); operations and history chunks
  /// in one `INSERT` each. Anything irregular — an erased account (its tombstone in the statement's snapshot, or the
  /// erasure's mark on its row's newest version: schema 16, ``erasureMark``), a key another transaction stored, an
  /// operation's seq stored already — fails the statement
  /// (the check reads every CTE's outcome before the first row is returned), which rolls the transaction back: the
  /// node then commits each account alone through `tipsd.commit`, which answers each case precisely (#42). Its rows
  /// are `tipsd.commit_set`'s: one an account, in the order given. Its parameters are ``commitSetFunction``'s, whose
  /// function stays for nodes of earlier builds. An account's entries and its chunks' cursors are gathered by
  /// `GROUP BY`, not by a subquery run for each account: that scanned the CTE once an account, quadratic in the
  /// commit's accounts (a third of PostgreSQL's CPU for a commit of 240 accounts, `docs/benchmarks.md`).
  package static let commitSet = commitSetStatement(keys: true)

  /// ``commitSet`` for a turn with no idempotency keys (most turns): the same statement without the keys' two CTEs,
  /// whose plan nodes PostgreSQL would otherwise set up and run empty each commit; its parameters are ``commitSet``'s
  /// first eleven.
  package static let commitSetWithoutKeys = commitSetStatement(keys: false)

  private static func commitSetStatement(keys: Bool) -> String {
    """
    WITH acc AS (
      SELECT a.i, a.account, a.ops, a.chunks, a.keys,
        sum(a.ops) OVER w - a.ops AS op_off, sum(a.chunks) OVER w - a.chunks AS chunk_off,
        sum(a.keys) OVER w - a.keys AS key_off
      FROM unnest($1::text[], $3::integer[], $6::integer[], $11::integer[]) WITH ORDINALITY AS a(account, ops, chunks, keys, i)
      WINDOW w AS (ORDER BY a.i)),
    \(keys ? keyCTEs : "")    chunk AS (
      SELECT acc.account, j, ($7::integer[])[acc.chunk_off + j] AS count,
        ($8::double precision[])[acc.chunk_off + j] AS first_at, ($9::double precision[])[acc.chunk_off + j] AS last_at,
        ($10::bytea[])[acc.chunk_off + j] AS entries,
        sum(($7::integer[])[acc.chunk_off + j]) OVER (PARTITION BY acc.account ORDER BY j) AS through
      FROM acc, generate_series(1, acc.chunks) AS j),
    need AS (
      SELECT acc.account, acc.ops, acc.op_off, coalesce(h.entries, 0)::bigint AS entries
      FROM acc LEFT JOIN (SELECT c.account, sum(c.count) AS entries FROM chunk c GROUP BY c.account) h
        ON h.account = acc.account
      WHERE acc.ops > 0 OR acc.chunks > 0 OR acc.keys > 0),
    bumped AS (
      INSERT INTO tipsd.accounts AS a (account, last_cursor, history_cursor)
        SELECT n.account, n.ops, n.entries FROM need n ORDER BY n.account
        ON CONFLICT (account) DO UPDATE SET last_cursor = a.last_cursor + excluded.last_cursor,
          history_cursor = a.history_cursor + excluded.history_cursor
        WHERE NOT a.erased
        RETURNING a.account, a.last_cursor, a.history_cursor),
    based AS (
      SELECT b.account, b.last_cursor - n.ops AS op_base, b.history_cursor - n.entries AS history_base, n.ops, n.op_off
      FROM bumped b JOIN need n ON n.account = b.account),
    stored AS (
      INSERT INTO tipsd.ops (account, cursor, device, seq, op)
        SELECT b.account, b.op_base + k, $2, ($4::bigint[])[b.op_off + k], ($5::text[])[b.op_off + k]
        FROM based b, generate_series(1, b.ops) AS k
        RETURNING 1),
    placed AS (
      INSERT INTO tipsd.history AS h (account, cursor, count, first_at, last_at, entries, arrival)
        SELECT c.account, b.history_base + c.through - c.count + 1, c.count, c.first_at, c.last_at, c.entries,
          nextval('tipsd.history_arrival')
        FROM chunk c JOIN based b ON b.account = c.account ORDER BY c.account, c.j
        RETURNING h.account, h.cursor),
    irregular AS (
      SELECT (SELECT count(*) FROM acc JOIN tipsd.erased e ON e.account = acc.account
          WHERE e.until > now() AND e.reopened_at IS NULL) AS erased,
        \(keys ? "(SELECT count(*) FROM wanted) - (SELECT count(*) FROM added)" : "0") AS conflicts,
        (SELECT count(*) FROM need) - (SELECT count(*) FROM bumped) AS marked,
        (SELECT count(*) FROM stored) AS stored)
    SELECT acc.account, CASE WHEN acc.ops > 0 THEN b.op_base + acc.ops END,
      CASE WHEN acc.chunks > 0 THEN coalesce(p.cursors, '{}') END,
      NULL::bigint, false, NULL::json, NULL::bigint[]
    FROM acc LEFT JOIN based b ON b.account = acc.account
      LEFT JOIN (SELECT account, array_agg(cursor ORDER BY cursor) AS cursors FROM placed GROUP BY account) p
        ON p.account = acc.account,
      irregular r
    WHERE CASE WHEN r.erased + r.conflicts + r.marked = 0 THEN r.stored >= 0
      ELSE ('tipsd: a set-based commit met ' || (r.erased + r.marked) || ' erased account(s) and ' || r.conflicts
        || ' key(s) stored before; each account is committed alone')::boolean END
    ORDER BY acc.i
    """
  }

  /// The keys' CTEs of ``commitSet``: the replies in one `INSERT … ON CONFLICT DO NOTHING`.
  private static let keyCTEs = """
    wanted AS (
      SELECT acc.account, ($12::text[])[acc.key_off + j] AS key, ($13::text[])[acc.key_off + j] AS reply,
        ($14::double precision[])[acc.key_off + j] AS at
      FROM acc, generate_series(1, acc.keys) AS j),
    added AS (
      INSERT INTO tipsd.idempotency (account, key, reply, at)
        SELECT w.account, w.key, w.reply, w.at FROM wanted w ORDER BY w.account, w.key
        ON CONFLICT (account, key) DO NOTHING RETURNING 1),
    """
}
