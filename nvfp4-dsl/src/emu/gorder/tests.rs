//! The global-memory order's unit tests: releases and acquires between
//! clusters, fences, atomics against plain accesses, proxy fences.

use super::*;

fn sem(acquire: bool, release: bool, scope: Scope) -> Kind {
    Kind::Atomic(Sem {
        acquire,
        release,
        scope,
    })
}

const RELAXED_READ: Kind = Kind::StrongRead(RELAXED);

/// A cluster of 2 threads, the next one of the launch.
fn next(c: &mut Clocks, g: &mut GlobalOrder) {
    c.reset(2);
    g.start([g.origins.len() as u32, 0, 0], 2);
}

/// Both threads of the running cluster pass a barrier.
fn barrier(c: &mut Clocks) {
    let mut b = Vec::new();
    c.release(0, &mut b);
    c.release(1, &mut b);
    c.acquire(0, &b);
    c.acquire(1, &b);
}

/// Cluster 0: thread 1 writes 8 bytes at 0x100, both pass a barrier,
/// then thread 0 does `publish` (on the flag at 0x200, after a fence
/// of gpu scope if `fence`, which each thread does before the
/// barrier if `early`).
fn writer(c: &mut Clocks, g: &mut GlobalOrder, publish: Kind, fence: bool, early: bool) {
    next(c, g);
    g.access(c, 1, 10, 0x100, 8, Kind::Write).unwrap();
    if early {
        g.fence(c, 0, Scope::Gpu);
        g.fence(c, 1, Scope::Gpu);
    }
    barrier(c);
    if fence {
        g.fence(c, 0, Scope::Gpu);
    }
    g.access(c, 0, 11, 0x200, 4, publish).unwrap();
}

/// The next cluster: thread 0 reads the flag with `read` (and fences
/// if `fence`), both pass a barrier, thread 1 reads the data.
fn reader(c: &mut Clocks, g: &mut GlobalOrder, read: Kind, fence: bool) -> Result<(), Race> {
    next(c, g);
    g.access(c, 0, 20, 0x200, 4, read).unwrap();
    if fence {
        g.fence(c, 0, Scope::Gpu);
    }
    barrier(c);
    g.access(c, 1, 21, 0x104, 4, Kind::Read)
}

fn fresh() -> (Clocks, GlobalOrder) {
    (Clocks::default(), GlobalOrder::new(true))
}

#[test]
fn a_release_and_an_acquire_of_gpu_scope_order_blocks() {
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, true, Scope::Gpu), false, false);
    reader(&mut c, &mut g, sem(true, false, Scope::Gpu), false).unwrap();
    // An acq_rel RMW hands on what it acquired: a third block that
    // acquires from the second knows the first's write.
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, true, Scope::Gpu), false, false);
    next(&mut c, &mut g);
    g.access(&mut c, 0, 30, 0x200, 4, sem(true, true, Scope::Gpu)).unwrap();
    next(&mut c, &mut g);
    g.access(&mut c, 1, 31, 0x200, 4, sem(true, false, Scope::Gpu)).unwrap();
    g.access(&mut c, 1, 32, 0x100, 8, Kind::Write).unwrap();
}

#[test]
fn relaxed_atomics_and_narrow_scopes_order_nothing_between_blocks() {
    for (publish, read) in [
        (sem(false, false, Scope::Gpu), sem(true, false, Scope::Gpu)),
        (sem(false, true, Scope::Gpu), sem(false, false, Scope::Gpu)),
        (sem(false, true, Scope::Cluster), sem(true, false, Scope::Gpu)),
        (sem(false, true, Scope::Gpu), sem(true, false, Scope::Cluster)),
    ] {
        let (mut c, mut g) = fresh();
        writer(&mut c, &mut g, publish, false, false);
        let e = reader(&mut c, &mut g, read, false).unwrap_err();
        assert_eq!((e.earlier.pc, e.earlier.thread, e.addr), (10, 1, 0x104));
        assert!(!g.running(&e.earlier) && g.origin(&e.earlier) == [0, 0, 0]);
    }
}

#[test]
fn fences_make_relaxed_atomics_release_and_acquire() {
    // A fence after the barrier, then the relaxed atomic: a release of
    // both threads' writes; a relaxed read, then a fence: an acquire.
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, false, Scope::Gpu), true, false);
    reader(&mut c, &mut g, RELAXED_READ, true).unwrap();
    // Without the reader's fence nothing is acquired.
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, false, Scope::Gpu), true, false);
    reader(&mut c, &mut g, RELAXED_READ, false).unwrap_err();
    // Each thread's fence before the barrier: thread 0's relaxed
    // atomic releases only thread 0's own writes.
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, false, Scope::Gpu), false, true);
    let e = reader(&mut c, &mut g, sem(true, false, Scope::Gpu), false).unwrap_err();
    assert_eq!(e.earlier.thread, 1);
    // A release atomic after those fences is cumulative again.
    let (mut c, mut g) = fresh();
    writer(&mut c, &mut g, sem(false, true, Scope::Gpu), false, true);
    reader(&mut c, &mut g, sem(true, false, Scope::Gpu), false).unwrap();
}

#[test]
fn the_async_proxy_reads_plain_writes_only_after_an_ordered_proxy_fence() {
    // Cluster 1: thread 1 writes 8 bytes at 0x100 (a fence before the
    // write if `before`), fences the async proxy at instruction 12 if
    // `fence` is 1 (before the barrier) or 2 (after the release),
    // and thread 0 releases the flag after a barrier. Cluster 2's
    // thread 0 acquires it and its bulk copy reads 0x104.
    let run = |before: bool, fence: u32| {
        let (mut c, mut g) = fresh();
        next(&mut c, &mut g);
        if before {
            g.proxy_fence(&c, 1, 9);
        }
        g.access(&mut c, 1, 10, 0x100, 8, Kind::Write).unwrap();
        if fence == 1 {
            g.proxy_fence(&c, 1, 12);
        }
        barrier(&mut c);
        g.access(&mut c, 0, 11, 0x200, 4, sem(false, true, Scope::Gpu)).unwrap();
        if fence == 2 {
            g.proxy_fence(&c, 1, 12);
        }
        next(&mut c, &mut g);
        g.access(&mut c, 0, 20, 0x200, 4, sem(true, false, Scope::Gpu)).unwrap();
        g.access(&mut c, 0, 21, 0x104, 4, Kind::Read).unwrap();
        g.proxy_check(&c, 0, 0x104, 4)
    };
    run(false, 1).unwrap();
    run(true, 1).unwrap();
    let e = run(true, 0).unwrap_err();
    assert_eq!((e.write.pc, e.write.thread, e.fence_pc, e.addr), (10, 1, None, 0x104));
    let e = run(false, 2).unwrap_err();
    assert_eq!((e.write.pc, e.fence_pc, e.addr), (10, Some(12), 0x104));
    // Within a thread a fence after the write is enough; bytes of the
    // word that the write did not touch need none.
    let (mut c, mut g) = fresh();
    next(&mut c, &mut g);
    g.access(&mut c, 0, 1, 0x40, 2, Kind::Write).unwrap();
    g.proxy_check(&c, 0, 0x42, 2).unwrap();
    g.proxy_check(&c, 0, 0x40, 4).unwrap_err();
    g.proxy_fence(&c, 0, 2);
    g.proxy_check(&c, 0, 0x40, 4).unwrap();
}

#[test]
fn atomics_race_with_plain_accesses_but_not_with_each_other() {
    let (mut c, mut g) = fresh();
    next(&mut c, &mut g);
    g.access(&mut c, 0, 1, 0x40, 4, sem(false, false, Scope::Gpu)).unwrap();
    g.access(&mut c, 1, 2, 0x40, 4, sem(false, false, Scope::Cluster))
        .unwrap();
    next(&mut c, &mut g);
    g.access(&mut c, 0, 3, 0x40, 4, sem(false, false, Scope::Gpu)).unwrap();
    g.access(&mut c, 1, 4, 0x40, 4, RELAXED_READ).unwrap();
    let e = g.access(&mut c, 1, 5, 0x40, 4, Kind::Read).unwrap_err();
    assert!(matches!(e.earlier_kind, Kind::Atomic(_)) && e.earlier.pc == 1);
    // Within the cluster a barrier orders them; the other bytes of a
    // word, and the thread's own accesses, are fine.
    let (mut c, mut g) = fresh();
    next(&mut c, &mut g);
    g.access(&mut c, 0, 1, 0x40, 2, Kind::Write).unwrap();
    g.access(&mut c, 1, 2, 0x42, 2, Kind::Write).unwrap();
    g.access(&mut c, 0, 3, 0x40, 4, sem(false, false, Scope::Gpu))
        .unwrap_err();
    barrier(&mut c);
    g.access(&mut c, 0, 4, 0x40, 4, sem(false, false, Scope::Gpu)).unwrap();
    g.access(&mut c, 0, 5, 0x40, 4, Kind::Read).unwrap();
    // Thread 1's write meets thread 0's read and atomic since.
    let e = g.access(&mut c, 1, 6, 0x40, 4, Kind::Write).unwrap_err();
    assert!(g.running(&e.earlier) && e.earlier.pc == 5 && e.earlier_kind == Kind::Read);
}
