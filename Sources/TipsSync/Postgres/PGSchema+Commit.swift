// `tipsd.commit` (schema 9, 10, 16): one account's part of a hosted node's commit (split from PGSchema.swift).

extension PGSchema {
  /// `tipsd.commit(account, …)`: see the type's notes on versions 9 and 10. Since version 16 it takes the account's
  /// row lock after its replies and reads the erasure's mark there (``erasureMark``): an erasure committed after its
  /// tombstone check stores nothing of it, the replies it inserted taken back.
  static let commitFunction = """
        DROP FUNCTION IF EXISTS tipsd.commit(text, text, text, bigint[], text[], integer[], double precision[],
          double precision[], bytea[], text[], text[], double precision[], text[], integer[], bigint[], text[]);
        CREATE OR REPLACE FUNCTION tipsd.commit(
          p_account text, p_node text, p_channel text, p_seqs bigint[], p_ops text[], p_counts integer[],
          p_first_ats double precision[], p_last_ats double precision[], p_entries bytea[], p_keys text[],
          p_replies text[], p_ats double precision[], p_devices text[], p_device_sizes integer[],
          p_device_seqs bigint[], p_device_ops text[],
          OUT last_cursor bigint, OUT history_firsts bigint[], OUT devices_last bigint, OUT erased boolean,
          OUT conflicts json, OUT device_clashes bigint[])
          LANGUAGE plpgsql AS $commit$
        DECLARE
          added integer;
          clash bigint;
          i integer;
          start integer := 1;
          size integer;
        BEGIN
          erased := false;
          IF coalesce(array_length(p_keys, 1), 0) > 0 THEN
            -- (Without keys, the erasure check is tipsd.push's and tipsd.append_history's: -1.)
            -- tipsd.is_erased, inlined (a SQL function called from PL/pgSQL is not).
            erased := EXISTS (SELECT 1 FROM tipsd.erased e
              WHERE e.account = p_account AND e.until > now() AND e.reopened_at IS NULL);
            IF erased THEN
              RETURN;
            END IF;
            IF array_length(p_keys, 1) = 1 THEN
              INSERT INTO tipsd.idempotency (account, key, reply, at) VALUES (p_account, p_keys[1], p_replies[1], p_ats[1])
                ON CONFLICT (account, key) DO NOTHING;
            ELSE
              INSERT INTO tipsd.idempotency (account, key, reply, at)
                SELECT p_account, u.k, u.r, u.a FROM unnest(p_keys, p_replies, p_ats) AS u(k, r, a) ORDER BY u.k
                ON CONFLICT (account, key) DO NOTHING;
            END IF;
            GET DIAGNOSTICS added = ROW_COUNT;
            IF added <> array_length(p_keys, 1) THEN
              -- Rare: a key another transaction committed. This call's own rows (this transaction's) are taken back.
              SELECT json_object_agg(s.key, s.reply) INTO conflicts FROM tipsd.idempotency s
                WHERE s.account = p_account AND s.key = ANY(p_keys) AND s.xmin <> (txid_current() % 4294967296)::text::xid;
              DELETE FROM tipsd.idempotency d WHERE d.account = p_account AND d.key = ANY(p_keys)
                AND d.xmin = (txid_current() % 4294967296)::text::xid;
              conflicts := coalesce(conflicts, '{}'::json);
              \(durabilityBarrier)
              RETURN;
            END IF;
          END IF;
          -- The account's row lock, and an erasure's mark on its newest version (schema 16): an erasure committed
          -- after this call's tombstone check stores nothing of it, its replies taken back.
          INSERT INTO tipsd.accounts (account) VALUES (p_account) ON CONFLICT (account) DO NOTHING;
          SELECT a.erased INTO erased FROM tipsd.accounts a WHERE a.account = p_account FOR UPDATE;
          IF erased THEN
            DELETE FROM tipsd.idempotency d WHERE d.account = p_account AND d.key = ANY(coalesce(p_keys, '{}'))
              AND d.xmin = (txid_current() % 4294967296)::text::xid;
            RETURN;
          END IF;
          IF coalesce(array_length(p_seqs, 1), 0) > 0 THEN
            last_cursor := tipsd.push(p_account, p_node, p_channel, p_seqs, p_ops);
          END IF;
          FOR i IN 1 .. coalesce(array_length(p_counts, 1), 0) LOOP
            history_firsts := history_firsts
              || tipsd.append_history(p_account, p_counts[i], p_first_ats[i], p_last_ats[i], p_entries[i]);
          END LOOP;
          IF coalesce(array_length(p_devices, 1), 0) > 0 AND NOT EXISTS (SELECT 1 FROM tipsd.erased e
            WHERE e.account = p_account AND e.until > now() AND e.reopened_at IS NULL)
          THEN
            -- The account's row lock before the comparison: another node's push of the same seqs is committed (and
            -- seen by the next statement) or waits for this one.
            INSERT INTO tipsd.accounts (account) VALUES (p_account) ON CONFLICT (account) DO NOTHING;
            PERFORM 1 FROM tipsd.accounts WHERE account = p_account FOR UPDATE;
          END IF;
          FOR i IN 1 .. coalesce(array_length(p_devices, 1), 0) LOOP
            size := p_device_sizes[i];
            SELECT min(u.s) INTO clash
              FROM unnest(p_device_seqs[start:start + size - 1], p_device_ops[start:start + size - 1]) AS u(s, o)
              JOIN tipsd.ops x ON x.account = p_account AND x.device = p_devices[i] AND x.seq = u.s
              WHERE x.op <> u.o AND x.op::jsonb <> u.o::jsonb;
            IF clash IS NULL THEN
              devices_last := tipsd.push(p_account, p_devices[i], p_channel, p_device_seqs[start:start + size - 1],
                p_device_ops[start:start + size - 1]);
            END IF;
            device_clashes := device_clashes || coalesce(clash, 0);
            start := start + size;
          END LOOP;
          erased := last_cursor = -1 OR devices_last = -1 OR -1 = ANY(coalesce(history_firsts, '{}'));
          erased := coalesce(erased, false);
        END
        $commit$;
    """
}
