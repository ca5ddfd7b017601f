//! The chunk tier on real SQLite with a fake object store: a file's bytes
//! leave the database and come back verified; collection deletes only what
//! no agent names; and a model-based test runs random sequences of writes,
//! deletes, checkpoints, restores, forks, moves and collections, with
//! faults injected, against a plain model of every agent's files.

mod common;

use std::collections::BTreeMap;

use common::{checkpoint, db, noise, p, put};
use proptest::prelude::*;
use stead_sql::{params, Sql, SqliteDb};
use stead_vfs::tier::fake::{block_on, FakeStore};
use stead_vfs::tier::{release_marker, Tier, TierPolicy, FORK_HOLDER};
use stead_vfs::{CheckpointId, ExportCursor, ImportProgress, Vfs, VfsError, CHUNK_SIZE};

const START: i64 = 1_700_000_000_000;

fn policy() -> TierPolicy {
    TierPolicy {
        min_bytes: CHUNK_SIZE as u64 / 2,
        hot_ms: 1_000,
        grace_ms: 5_000,
        batch: 4,
        ..TierPolicy::default()
    }
}

fn tier<'a, 'db>(
    vfs: &'a Vfs<'db, SqliteDb>,
    store: &'a FakeStore,
    agent: &'a str,
) -> Tier<'a, 'db, SqliteDb, FakeStore> {
    Tier::new(vfs, store, agent).with_policy(policy())
}

/// Runs move and collection rounds at `now`, `now + grace`, ... until two
/// in a row do nothing (the first may be inside a grace period); returns
/// the clock after.
fn settle(db: &SqliteDb, store: &FakeStore, agent: &str, mut now: i64) -> i64 {
    let mut quiet = 0;
    for _ in 0..200 {
        let vfs = Vfs::new(db, now);
        let tier = tier(&vfs, store, agent);
        let moved = block_on(tier.move_some()).unwrap();
        let collected = block_on(tier.collect_garbage()).unwrap();
        now += policy().grace_ms + policy().hot_ms;
        quiet = match moved == Default::default() && collected == Default::default() {
            true => quiet + 1,
            false => 0,
        };
        if quiet == 2 {
            return now;
        }
    }
    panic!("the tier never settled");
}

fn read(vfs: &Vfs<'_, SqliteDb>, store: &FakeStore, agent: &str, path: &str) -> Vec<u8> {
    block_on(tier(vfs, store, agent).fetched(|| vfs.read_file(&p(path)))).unwrap()
}

fn one(db: &SqliteDb, sql: &str) -> i64 {
    db.query_row(sql, params![])
        .unwrap()
        .unwrap()
        .int(0)
        .unwrap()
}

#[test]
fn a_cold_large_file_moves_out_reads_back_and_small_files_stay() {
    let (db, store) = (db(), FakeStore::default());
    let big = noise(3 * CHUNK_SIZE + 123, 1);
    {
        let vfs = Vfs::new(&db, START);
        put(&vfs, "/big.bin", &big);
        put(&vfs, "/small.txt", "hello\n");
    }
    // Hot: nothing moves yet.
    let vfs = Vfs::new(&db, START);
    let moved = block_on(tier(&vfs, &store, "a").move_some()).unwrap();
    assert_eq!(moved.started, 0);
    let now = settle(&db, &store, "a", START + 2_000);
    let vfs = Vfs::new(&db, now);
    let usage = vfs.tier_usage().unwrap();
    assert_eq!(usage.tiered.0, 3, "the three full chunks moved: {usage:?}");
    assert_eq!(
        usage.inline.0, 2,
        "the small file and the short tail stay inline"
    );
    assert_eq!(usage.moving.0, 0);
    // A synchronous read says what to fetch; it never answers bytes.
    match vfs.read_file(&p("/big.bin")) {
        Err(VfsError::Tiered { chunks }) => assert_eq!(chunks.len(), 3),
        other => panic!("expected Tiered, got {:?}", other.map(|b| b.len())),
    }
    assert_eq!(vfs.read_file(&p("/small.txt")).unwrap(), b"hello\n");
    // A streamed read takes chunks from the bucket, verified, and leaves
    // them there.
    let (_, chunks) = vfs.file_chunks(&p("/big.bin")).unwrap();
    let t = tier(&vfs, &store, "a");
    let mut streamed = Vec::new();
    for chunk in chunks {
        streamed.extend(block_on(t.read_chunk(chunk.id, "/big.bin")).unwrap());
    }
    assert_eq!(streamed, big);
    assert_eq!(vfs.tier_usage().unwrap().tiered.0, 3);
    // The tools bring them back.
    assert_eq!(read(&vfs, &store, "a", "/big.bin"), big);
    assert_eq!(vfs.tier_usage().unwrap().tiered.0, 0);
}

#[test]
fn a_corrupt_or_failed_read_is_retried_and_never_answers_wrong_bytes() {
    let (db, store) = (db(), FakeStore::default());
    let big = noise(2 * CHUNK_SIZE, 2);
    put(&Vfs::new(&db, START), "/big.bin", &big);
    let now = settle(&db, &store, "a", START + 2_000);
    let vfs = Vfs::new(&db, now);
    let (_, chunks) = vfs.file_chunks(&p("/big.bin")).unwrap();
    let ids: Vec<i64> = chunks.iter().map(|c| c.id).collect();
    let t = tier(&vfs, &store, "a");
    store.corrupt_reads(2);
    assert_eq!(
        block_on(t.read_chunk(ids[0], "/big.bin")).unwrap(),
        big[..CHUNK_SIZE]
    );
    store.corrupt_reads(10);
    match block_on(t.read_chunk(ids[0], "/big.bin")) {
        Err(VfsError::Store(stead_vfs::tier::StoreError::Mismatch { .. })) => {}
        other => panic!("expected a mismatch, got {:?}", other.map(|b| b.len())),
    }
    store.heal();
    // A missing object is a clear error, and verify names it.
    let key = store.keys("chunks/")[0].clone();
    store.objects.borrow_mut().remove(&key);
    assert!(matches!(
        block_on(t.fetched(|| vfs.read_file(&p("/big.bin")))),
        Err(VfsError::Store(stead_vfs::tier::StoreError::Missing { .. }))
    ));
    let page = block_on(t.verify(0, 100)).unwrap();
    // (The fetch may have brought the other chunk back before it failed.)
    assert!(page.checked >= 1);
    assert_eq!(page.missing.len(), 1);
    assert_eq!(page.missing[0].inodes.len(), 1);
    assert_eq!(page.next, None);
}

#[test]
fn collection_waits_its_grace_and_keeps_what_another_agent_names() {
    let store = FakeStore::default();
    let (a, b) = (db(), db());
    let big = noise(CHUNK_SIZE, 3);
    put(&Vfs::new(&a, START), "/f", &big);
    put(&Vfs::new(&b, START), "/g", &big);
    let now = settle(&a, &store, "a", START + 2_000);
    let now = settle(&b, &store, "b", now);
    assert_eq!(store.keys("refs/").len(), 2, "one marker per agent");
    assert_eq!(store.keys("chunks/").len(), 1, "one object for both");
    // a drops it: after the grace its marker goes, the object stays for b.
    Vfs::new(&a, now).remove(&p("/f"), false).unwrap();
    let vfs = Vfs::new(&a, now);
    let early = block_on(tier(&vfs, &store, "a").collect_garbage()).unwrap();
    assert_eq!(early.markers, 0, "not before the grace period");
    let now = settle(&a, &store, "a", now + 1);
    assert_eq!(store.keys("refs/").len(), 1);
    assert_eq!(store.keys("chunks/").len(), 1);
    assert_eq!(read(&Vfs::new(&b, now), &store, "b", "/g"), big);
    // b's read brought it back: once b's grace is over, nothing is left.
    settle(&b, &store, "b", now + 2_000);
    Vfs::new(&b, now).remove(&p("/g"), false).unwrap();
    settle(&b, &store, "b", now + 1_000_000);
    assert_eq!(store.keys(""), Vec::<String>::new(), "nothing left behind");
}

#[test]
fn another_features_holds_keep_chunks_until_released() {
    let (db, store) = (db(), FakeStore::default());
    let vfs = Vfs::new(&db, START);
    let bytes = noise(CHUNK_SIZE, 4);
    let id = vfs.put_held_chunk("envsnap:1", &bytes).unwrap();
    assert_eq!(vfs.held_chunks("envsnap:1").unwrap(), vec![id]);
    let now = settle(&db, &store, "a", START + 2_000);
    let vfs = Vfs::new(&db, now);
    assert_eq!(
        block_on(tier(&vfs, &store, "a").read_chunk(id, "envsnap")).unwrap(),
        bytes
    );
    vfs.release_chunks("envsnap:1").unwrap();
    assert_eq!(one(&db, "SELECT COUNT(*) FROM chunks"), 0);
    settle(&db, &store, "a", now + 1);
    assert!(store.keys("").is_empty());
}

#[test]
fn a_fork_adopts_tiered_chunks_without_copying_bytes() {
    let store = FakeStore::default();
    let (a, b) = (db(), db());
    let big = noise(2 * CHUNK_SIZE, 5);
    put(&Vfs::new(&a, START), "/f", &big);
    let now = settle(&a, &store, "a", START + 2_000);
    let stored = store.chunk_bytes();
    let hashes: Vec<(Vec<u8>, i64)> = a
        .query("SELECT hash, size FROM chunks WHERE tier = 2", params![])
        .unwrap()
        .into_iter()
        .map(|mut row| (row.take_blob(0).unwrap(), row.int(1).unwrap()))
        .collect();
    let vfs = Vfs::new(&b, now);
    let t = tier(&vfs, &store, "b");
    for (hash, size) in &hashes {
        let hash: [u8; 32] = hash.as_slice().try_into().unwrap();
        block_on(t.adopt(&hash, *size as u64, "fork")).unwrap();
    }
    assert_eq!(store.chunk_bytes(), stored, "no byte copied");
    assert_eq!(store.keys("refs/").len(), 4);
    assert_eq!(vfs.held_chunks("fork").unwrap().len(), 2);
    // The source lets go: the target's markers keep the objects.
    Vfs::new(&a, now).remove(&p("/f"), false).unwrap();
    settle(&a, &store, "a", now + 1);
    assert_eq!(store.chunk_bytes(), stored);
    let page = block_on(t.verify(0, 10)).unwrap();
    assert_eq!((page.checked, page.missing.len()), (2, 0));
    // An adoption of an object that is not there fails and holds nothing.
    let err = block_on(t.adopt(&[7; 32], 10, "fork2")).unwrap_err();
    assert!(matches!(err, VfsError::Store(_)), "{err}");
    assert!(vfs.held_chunks("fork2").unwrap().is_empty());
    // ... and its marker, put before the object was found missing, is
    // collected; the adopted ones stay.
    let missing = format!("refs/{}/b", "07".repeat(32));
    assert_eq!(store.keys(&missing).len(), 1);
    settle(&b, &store, "b", now + 1);
    assert!(store.keys(&missing).is_empty(), "no marker leaked");
    assert_eq!(store.keys("refs/").len(), 2);
}

#[test]
fn a_fork_stream_shares_tiered_chunks_and_the_copy_reads_them() {
    let store = FakeStore::default();
    let (a, b) = (db(), db());
    let big = noise(3 * CHUNK_SIZE + 7, 8);
    put(&Vfs::new(&a, START), "/d/big", &big);
    put(&Vfs::new(&a, START), "/small", "small\n");
    let now = settle(&a, &store, "a", START + 2_000);
    let stored = store.chunk_bytes();
    let objects = store.keys("chunks/").len();
    let source = Vfs::new(&a, now);
    let id = checkpoint(&source);
    let (to, mut cursor, mut sent, mut shared) = (Vfs::new(&b, now), ExportCursor::Start, 0, 0);
    let into = tier(&to, &store, "b");
    loop {
        let page = source.export_page(id, &cursor, 1 << 20).unwrap();
        (sent, shared) = (sent + page.chunk_bytes, shared + page.shared_chunks);
        block_on(into.adopt_shared(&page.frames)).unwrap();
        let progress = to.import_page(&page.frames).unwrap();
        to.release_chunks(FORK_HOLDER).unwrap();
        match (progress, page.next) {
            (ImportProgress::Staged(_), Some(next)) => cursor = next,
            (ImportProgress::Finished { .. }, None) => break,
            (progress, next) => panic!("{progress:?} at {next:?}"),
        }
    }
    assert_eq!(shared, 3, "the three full chunks are shared");
    assert!(
        sent < 1024,
        "only the small file and the tail are sent: {sent}"
    );
    assert_eq!(store.chunk_bytes(), stored, "no object copied");
    assert_eq!(store.keys("chunks/").len(), objects);
    assert_eq!(to.tier_usage().unwrap().tiered.0, 3);
    // The source forgets the file: the copy's markers keep its objects.
    source.delete_checkpoint(id).unwrap();
    source.remove(&p("/d/big"), false).unwrap();
    let now = settle(&a, &store, "a", now + 1);
    assert_eq!(read(&Vfs::new(&b, now), &store, "b", "/d/big"), big);
    assert_eq!(read(&Vfs::new(&b, now), &store, "b", "/small"), b"small\n");
}

#[test]
fn a_move_cut_at_every_request_resumes_and_loses_nothing() {
    let big = noise(3 * CHUNK_SIZE + 5, 6);
    // Every kill point of a full move: fail the n-th request, then settle.
    for n in 1..=24 {
        let (db, store) = (db(), FakeStore::default());
        put(&Vfs::new(&db, START), "/big", &big);
        let mut now = START + 2_000;
        store.fail_in(n);
        for _ in 0..6 {
            let vfs = Vfs::new(&db, now);
            let t = tier(&vfs, &store, "a");
            let moved = block_on(t.move_some());
            let collected = block_on(t.collect_garbage());
            for error in [moved.err(), collected.err()].into_iter().flatten() {
                assert!(matches!(error, VfsError::Store(_)), "{error}");
            }
            now += 6_000;
        }
        now = settle(&db, &store, "a", now);
        let vfs = Vfs::new(&db, now);
        assert_eq!(vfs.tier_usage().unwrap().tiered.0, 3, "kill point {n}");
        assert_eq!(read(&vfs, &store, "a", "/big"), big, "kill point {n}");
    }
}

// ---- The model ----

#[derive(Debug, Clone)]
enum Op {
    Write {
        agent: usize,
        path: usize,
        large: bool,
        seed: u64,
    },
    Delete {
        agent: usize,
        path: usize,
    },
    Checkpoint {
        agent: usize,
    },
    DropCheckpoint {
        agent: usize,
        which: usize,
    },
    Restore {
        agent: usize,
        which: usize,
    },
    Fork {
        agent: usize,
        fault: Option<u64>,
    },
    /// The agent is deleted: its database goes, its markers wait to be
    /// released (as `DELETE /agents/{id}` does).
    DeleteAgent {
        agent: usize,
    },
    /// One bounded round of releasing deleted agents' markers.
    Release {
        fault: Option<u64>,
    },
    Move {
        agent: usize,
        fault: Option<u64>,
    },
    Collect {
        agent: usize,
        fault: Option<u64>,
    },
    Read {
        agent: usize,
        path: usize,
        fault: Option<u64>,
        corrupt: bool,
    },
    Tick {
        ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let agent = 0usize..3;
    let fault = prop::option::weighted(0.3, 1u64..6);
    prop_oneof![
        4 => (agent.clone(), 0usize..5, any::<bool>(), 0u64..6)
            .prop_map(|(agent, path, large, seed)| Op::Write { agent, path, large, seed }),
        2 => (agent.clone(), 0usize..5).prop_map(|(agent, path)| Op::Delete { agent, path }),
        2 => agent.clone().prop_map(|agent| Op::Checkpoint { agent }),
        1 => (agent.clone(), 0usize..4)
            .prop_map(|(agent, which)| Op::DropCheckpoint { agent, which }),
        1 => (agent.clone(), 0usize..4).prop_map(|(agent, which)| Op::Restore { agent, which }),
        2 => (agent.clone(), fault.clone()).prop_map(|(agent, fault)| Op::Fork { agent, fault }),
        1 => agent.clone().prop_map(|agent| Op::DeleteAgent { agent }),
        2 => fault.clone().prop_map(|fault| Op::Release { fault }),
        3 => (agent.clone(), fault.clone()).prop_map(|(agent, fault)| Op::Move { agent, fault }),
        2 => (agent.clone(), fault.clone())
            .prop_map(|(agent, fault)| Op::Collect { agent, fault }),
        2 => (agent, 0usize..5, fault, any::<bool>())
            .prop_map(|(agent, path, fault, corrupt)| Op::Read { agent, path, fault, corrupt }),
        3 => prop_oneof![Just(600i64), Just(3_000), Just(6_000)].prop_map(|ms| Op::Tick { ms }),
    ]
}

type Files = BTreeMap<String, Vec<u8>>;

struct Agent {
    name: String,
    db: SqliteDb,
    files: Files,
    checkpoints: Vec<(CheckpointId, Files)>,
}

struct World {
    store: FakeStore,
    agents: Vec<Agent>,
    /// Markers of deleted agents not released yet: (hash, agent, since).
    released: Vec<(Vec<u8>, String, i64)>,
    /// Names given so far (a deleted agent's name may come back).
    named: usize,
    now: i64,
}

fn path_of(i: usize) -> String {
    format!("/d{}/f{i}", i % 2)
}

fn content(large: bool, seed: u64) -> Vec<u8> {
    // Few seeds, so agents and files share chunks often.
    match large {
        true => noise(CHUNK_SIZE + (seed as usize % 3) * CHUNK_SIZE / 2, seed),
        false => noise(100 + seed as usize, seed + 100),
    }
}

/// A store result is either the right answer or a store error.
fn allow_store<T>(result: stead_vfs::Result<T>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(VfsError::Store(_)) => None,
        Err(other) => panic!("unexpected error {other}"),
    }
}

impl World {
    fn new() -> World {
        World {
            store: FakeStore::default(),
            agents: vec![Agent {
                name: "agent-0".into(),
                db: db(),
                files: Files::new(),
                checkpoints: Vec::new(),
            }],
            released: Vec::new(),
            named: 1,
            now: START,
        }
    }

    fn apply(&mut self, op: Op) {
        let n = self.agents.len();
        let now = self.now;
        match op {
            Op::Tick { ms } => self.now += ms,
            Op::Write {
                agent,
                path,
                large,
                seed,
            } => {
                let a = &mut self.agents[agent % n];
                let data = content(large, seed);
                put(&Vfs::new(&a.db, now), &path_of(path), &data);
                a.files.insert(path_of(path), data);
            }
            Op::Delete { agent, path } => {
                let a = &mut self.agents[agent % n];
                if a.files.remove(&path_of(path)).is_some() {
                    Vfs::new(&a.db, now)
                        .remove(&p(&path_of(path)), false)
                        .unwrap();
                }
            }
            Op::Checkpoint { agent } => {
                let a = &mut self.agents[agent % n];
                let id = checkpoint(&Vfs::new(&a.db, now));
                a.checkpoints.push((id, a.files.clone()));
            }
            Op::DropCheckpoint { agent, which } => {
                let a = &mut self.agents[agent % n];
                if !a.checkpoints.is_empty() {
                    let (id, _) = a.checkpoints.remove(which % a.checkpoints.len());
                    Vfs::new(&a.db, now).delete_checkpoint(id).unwrap();
                }
            }
            Op::Restore { agent, which } => {
                let a = &mut self.agents[agent % n];
                if !a.checkpoints.is_empty() {
                    let (id, files) = a.checkpoints[which % a.checkpoints.len()].clone();
                    Vfs::new(&a.db, now).restore(id, None).unwrap();
                    a.files = files;
                }
            }
            Op::Fork { agent, fault } => self.fork(agent % n, fault),
            Op::DeleteAgent { agent } => {
                if n > 1 {
                    let gone = self.agents.remove(agent % n);
                    self.forget(&gone);
                }
            }
            Op::Release { fault } => {
                if let Some(k) = fault {
                    self.store.fail_in(k);
                }
                allow_store(self.release(4));
                self.store.heal();
            }
            Op::Move { agent, fault } => self.maintain(agent % n, fault, false),
            Op::Collect { agent, fault } => self.maintain(agent % n, fault, true),
            Op::Read {
                agent,
                path,
                fault,
                corrupt,
            } => {
                let a = &self.agents[agent % n];
                let Some(want) = a.files.get(&path_of(path)) else {
                    return;
                };
                if let Some(k) = fault {
                    self.store.fail_in(k);
                }
                if corrupt {
                    self.store.corrupt_reads(1);
                }
                let vfs = Vfs::new(&a.db, now);
                let t = tier(&vfs, &self.store, &a.name);
                let got = allow_store(block_on(t.fetched(|| vfs.read_file(&p(&path_of(path))))));
                self.store.heal();
                if let Some(got) = got {
                    assert!(
                        got == *want,
                        "{} of {} read wrong bytes",
                        path_of(path),
                        a.name
                    );
                }
            }
        }
    }

    /// One round of agent `agent`'s move (or collection), the `fault`-th
    /// store request failing.
    fn maintain(&self, agent: usize, fault: Option<u64>, collect: bool) {
        let a = &self.agents[agent];
        if let Some(k) = fault {
            self.store.fail_in(k);
        }
        let vfs = Vfs::new(&a.db, self.now);
        let t = tier(&vfs, &self.store, &a.name);
        if collect {
            allow_store(block_on(t.collect_garbage()));
        } else {
            allow_store(block_on(t.move_some()));
        }
        self.store.heal();
    }

    /// Forks agent `from` into a new agent through the fork stream: tiered
    /// chunks are adopted, not copied. A store failure breaks the fork off;
    /// the target is wiped then, as the agent does.
    fn fork(&mut self, from: usize, fault: Option<u64>) {
        if self.agents.len() >= 3 {
            return;
        }
        let now = self.now;
        // Names come back: "agent-1" deleted, then forked again.
        let name = format!("agent-{}", self.named % 4);
        self.named += 1;
        if self.agents.iter().any(|a| a.name == name) {
            return;
        }
        let target = Agent {
            name,
            db: db(),
            files: self.agents[from].files.clone(),
            checkpoints: Vec::new(),
        };
        let source = &self.agents[from];
        let vfs = Vfs::new(&source.db, now);
        let id = checkpoint(&vfs);
        let shared = one(
            &source.db,
            &format!(
                "SELECT COUNT(DISTINCT k.chunk) FROM checkpoint_chunks k JOIN chunks c \
                 ON c.id = k.chunk WHERE k.checkpoint = {} AND c.tier = 2",
                id.0
            ),
        );
        let t = tier(&vfs, &self.store, &source.name);
        let to = Vfs::new(&target.db, now);
        let into = tier(&to, &self.store, &target.name);
        if let Some(k) = fault {
            self.store.fail_in(k);
        }
        let mut cursor = ExportCursor::Start;
        let finished = loop {
            let page = block_on(t.fetched(|| vfs.export_page(id, &cursor, 1 << 20))).unwrap();
            let adopted = block_on(into.adopt_shared(&page.frames));
            let imported = adopted.and_then(|_| to.import_page(&page.frames));
            to.release_chunks(FORK_HOLDER).unwrap();
            match (allow_store(imported), page.next) {
                (None, _) => break false,
                (Some(ImportProgress::Staged(_)), Some(next)) => cursor = next,
                (Some(ImportProgress::Finished { .. }), None) => break true,
                (progress, next) => panic!("{progress:?} at {next:?}"),
            }
        };
        self.store.heal();
        vfs.delete_checkpoint(id).unwrap();
        if !finished {
            self.forget(&target);
            return;
        }
        let tiered = one(&target.db, "SELECT COUNT(*) FROM chunks WHERE tier = 2");
        assert_eq!(tiered, shared, "every tiered chunk adopted, no byte copied");
        self.agents.push(target);
    }

    /// Agent `gone`'s database is wiped: its markers wait to be released.
    fn forget(&mut self, gone: &Agent) {
        let hashes = Vfs::new(&gone.db, self.now).marked_hashes().unwrap();
        for hash in hashes {
            self.released.push((hash, gone.name.clone(), self.now));
        }
    }

    /// Releases up to `batch` deleted agents' markers whose grace is over,
    /// keeping those a live agent of the same name relies on (as the
    /// agent's `tier_release` does). A store failure stops the round.
    fn release(&mut self, batch: usize) -> stead_vfs::Result<()> {
        let due = self.now - policy().grace_ms;
        for _ in 0..batch {
            let Some(at) = self.released.iter().position(|(_, _, since)| *since <= due) else {
                return Ok(());
            };
            let (hash, name, _) = &self.released[at];
            let live = self.agents.iter().find(|a| &a.name == name);
            let relied = match live {
                Some(a) => Vfs::new(&a.db, self.now).relies_on_tier(hash)?,
                None => false,
            };
            if !relied {
                block_on(release_marker(&self.store, hash, name))?;
            }
            self.released.remove(at);
        }
        Ok(())
    }

    /// Settles every agent, then checks what the issue asks.
    fn check(&mut self) {
        self.store.heal();
        self.now += 10_000;
        self.release(usize::MAX).unwrap();
        assert!(self.released.is_empty());
        let mut now = self.now;
        for _ in 0..3 {
            for a in &self.agents {
                now = settle(&a.db, &self.store, &a.name, now);
            }
        }
        for a in &self.agents {
            let unreferenced = one(
                &a.db,
                "SELECT COUNT(*) FROM chunks c WHERE \
                 NOT EXISTS (SELECT 1 FROM file_chunks f WHERE f.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM checkpoint_chunks k WHERE k.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM upload_chunks u WHERE u.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM import_chunks i WHERE i.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM chunk_holds h WHERE h.chunk = c.id)",
            );
            assert_eq!(unreferenced, 0, "{}: unreferenced chunk rows", a.name);
            assert_eq!(one(&a.db, "SELECT COUNT(*) FROM chunks WHERE tier = 1"), 0);
            let vfs = Vfs::new(&a.db, now);
            let page = block_on(tier(&vfs, &self.store, &a.name).verify(0, 10_000)).unwrap();
            assert!(
                page.missing.is_empty() && page.unmarked.is_empty(),
                "{page:?}"
            );
        }
        // Every marker is an agent relying on its object; every object has one.
        for key in self.store.keys("refs/") {
            let (hash, agent) = key["refs/".len()..].split_once('/').unwrap();
            let a = self.agents.iter().find(|a| a.name == agent).unwrap();
            let relied =
                a.db.query(
                    "SELECT 1 FROM chunks WHERE hex(hash) = upper(?) AND tier != 0",
                    params![hash],
                )
                .unwrap();
            assert!(!relied.is_empty(), "{key} is a marker nobody relies on");
        }
        for key in self.store.keys("chunks/") {
            let hash = &key["chunks/".len()..];
            assert!(
                !self.store.keys(&format!("refs/{hash}/")).is_empty(),
                "{key} is an object no marker keeps"
            );
        }
        // Every file and every checkpoint reads back exactly.
        for a in &self.agents {
            let vfs = Vfs::new(&a.db, now);
            let t = tier(&vfs, &self.store, &a.name);
            for (path, want) in &a.files {
                let got = block_on(t.fetched(|| vfs.read_file(&p(path)))).unwrap();
                assert!(got == *want, "{path} of {}", a.name);
            }
            let listed = one(&a.db, "SELECT COUNT(*) FROM nodes WHERE kind = 1");
            assert_eq!(listed as usize, a.files.len(), "{}: files", a.name);
            for (id, files) in &a.checkpoints {
                let snapshot = vfs.snapshot(*id).unwrap();
                for (path, want) in files {
                    let got = block_on(t.fetched(|| snapshot.read_file(&p(path)))).unwrap();
                    assert!(got == *want, "{path} of {} at checkpoint {id:?}", a.name);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_histories_keep_every_byte_and_leave_nothing_behind(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        let mut world = World::new();
        for op in ops {
            world.apply(op);
        }
        world.check();
    }
}
