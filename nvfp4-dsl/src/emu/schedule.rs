//! How a launch is scheduled: the public [`Options`], and the seeded
//! choices of the adversarial schedule (which warp runs next, for how many
//! instructions, when an asynchronous operation completes).

/// How the emulator runs a launch. `Options::default()` is the checked
/// mode: the adversarial schedule with seed 0 and the race checks;
/// [`Options::fast`] is the fast mode for plain functional runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The order of warps and of asynchronous completions.
    pub schedule: Schedule,
    /// Keep the threads' vector clocks and check shared-memory data races,
    /// missing `fence.proxy.async` and the ordering of tensor-memory
    /// accesses (the checks built on happens-before). Off in the fast
    /// mode; every other check stays.
    pub race_check: bool,
    /// Stops the launch with an error when one cluster (one block, without
    /// clusters) runs more than this many warp instructions (a kernel that
    /// never ends on its own: a mutated wait, a spin on a flag nobody
    /// sets). `None`: no limit.
    pub max_warp_instructions: Option<u64>,
    /// How many threads run the launch's clusters in parallel (`None`:
    /// one per core, [`std::thread::available_parallelism`]). The result
    /// and the errors do not depend on it: each cluster's schedule comes
    /// from the seed and its index, and the first cluster in grid order
    /// that fails is the one reported. Kernels whose blocks may
    /// communicate through global memory (atomics, `.volatile`,
    /// `.relaxed`, `.acquire`/`.release` accesses, bulk reductions)
    /// run their clusters one after another (in grid order only under the
    /// sequential schedule).
    pub threads: Option<usize>,
    /// The multiprocessors the emulated GPU reports (`None`: the target's
    /// usual count), for host code that sizes its grids by them.
    pub multiprocessors: Option<u32>,
    /// Independent thread scheduling, as on sm_70 and later: the lanes of
    /// a warp that a branch splits run as separate groups, in an order
    /// the seed picks, and meet again only where the program reconverges
    /// them (`bar.warp.sync`, a `.sync` warp collective, a CTA barrier),
    /// so an `.aligned` instruction reached by a warp that diverged
    /// and was not reconverged is reported. Off by default: the lanes of
    /// a warp then run in groups of the lowest PC, reconverging wherever
    /// they meet. See [`Options::with_independent_threads`].
    pub independent_threads: bool,
    /// Starvation (with the adversarial and priority schedules; the
    /// sequential one ignores it): one warp of the cluster at a time, the
    /// seed picks which, runs only when no other warp can, one
    /// instruction at a time, and every asynchronous operation completes
    /// as early as it legally may (at the end of the turn that issued
    /// it; a warp's turn ends when it issues one, so that the warps it
    /// lets through run before it goes on). A stretch lasts until a
    /// warp's wait completes (a new round of a pipeline) or for 256 turns;
    /// then the seed picks the next starved warp among the ready ones. So a
    /// starved thread looks at an mbarrier only after the others and the
    /// asynchronous units made every phase they could complete: an
    /// arrive or `tcgen05.commit` on the wrong stage's barrier runs the
    /// barrier two phases ahead of the starved waiter (the phase-overrun
    /// check reports it), a producer's slot is refilled the moment its
    /// consumers release it.
    pub starve: bool,
}

/// The order in which warps run and asynchronous operations complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Warps take turns in a fixed order, thousands of instructions each;
    /// asynchronous copies and `tcgen05` operations complete when they
    /// are issued. One legal execution, and the kindest: use it to tell
    /// whether a failure depends on the order.
    Sequential,
    /// Warps of a cluster run in a seeded random order, a random number of
    /// instructions at a time; every asynchronous operation completes at a
    /// legal point the seed picks (when nothing else of its block can run,
    /// or after a random number of turns), its destination poisoned until
    /// then. The
    /// same seed gives the same run.
    Adversarial {
        /// The seed of every choice.
        seed: u64,
    },
    /// Probabilistic concurrency testing (PCT, Burckhardt et al., ASPLOS
    /// 2010): each warp of a cluster gets a seeded random priority, the
    /// highest-priority warp that can run runs until it blocks or exits,
    /// and at random turns (one in 2048 on average) the warp
    /// that ran drops below every other. So one warp or block runs as far
    /// ahead of the rest as the synchronisation lets it, which uniform
    /// random turns almost never do: a block that stores, and exits,
    /// while a peer has still to read its shared memory; a producer a
    /// whole ring ahead of its consumers. Asynchronous operations complete
    /// as in `Adversarial`.
    Priority {
        /// The seed of every choice.
        seed: u64,
    },
}

impl Default for Options {
    fn default() -> Options {
        Options::adversarial(0)
    }
}

impl Options {
    /// The adversarial schedule with `seed`, no instruction limit.
    pub fn adversarial(seed: u64) -> Options {
        Options {
            schedule: Schedule::Adversarial { seed },
            race_check: true,
            max_warp_instructions: None,
            multiprocessors: None,
            threads: None,
            independent_threads: false,
            starve: false,
        }
    }

    /// The priority (PCT) schedule with `seed`, no instruction limit.
    pub fn priority(seed: u64) -> Options {
        Options {
            schedule: Schedule::Priority { seed },
            race_check: true,
            max_warp_instructions: None,
            multiprocessors: None,
            threads: None,
            independent_threads: false,
            starve: false,
        }
    }

    /// The fast mode, for plain functional runs: the sequential schedule
    /// (asynchronous operations complete in order, at their issue) without
    /// the race checks.
    pub fn fast() -> Options {
        Options {
            race_check: false,
            ..Options::sequential()
        }
    }

    /// The sequential schedule with the race checks, no instruction limit.
    pub fn sequential() -> Options {
        Options {
            schedule: Schedule::Sequential,
            race_check: true,
            max_warp_instructions: None,
            multiprocessors: None,
            threads: None,
            independent_threads: false,
            starve: false,
        }
    }

    /// The same options with a limit of `n` warp instructions per launch.
    pub fn with_max_warp_instructions(self, n: u64) -> Options {
        Options {
            max_warp_instructions: Some(n),
            ..self
        }
    }

    /// The same options with starvation (see [`Options::starve`]).
    pub fn with_starvation(self) -> Options {
        Options { starve: true, ..self }
    }

    /// The same options with the clusters run by `n` threads (at least 1).
    pub fn with_threads(self, n: usize) -> Options {
        Options {
            threads: Some(n.max(1)),
            ..self
        }
    }

    /// The same options with independent thread scheduling
    /// ([`Options::independent_threads`]): each warp's choice of which of
    /// its diverged groups runs comes from the schedule's seed (a fixed
    /// one in the sequential schedule) and the warp's place in the grid,
    /// so the same seed gives the same run on any number of threads.
    ///
    /// ```
    /// use nvfp4_dsl::emu::Options;
    /// let checked = Options::adversarial(7).with_independent_threads();
    /// assert!(checked.independent_threads);
    /// ```
    pub fn with_independent_threads(self) -> Options {
        Options {
            independent_threads: true,
            ..self
        }
    }

    /// The same options for an emulated GPU that reports `n`
    /// multiprocessors.
    pub fn with_multiprocessors(self, n: u32) -> Options {
        Options {
            multiprocessors: Some(n),
            ..self
        }
    }
}

/// Instructions a warp runs per turn in the sequential schedule.
const SLICE: u32 = 4096;

/// In the priority schedule, the warp that ran drops to the lowest
/// priority after one turn in this many, on average.
const CHANGE_POINT: u64 = 2048;

/// Most turns a warp is starved for (with [`Options::starve`]).
const STRETCH: u64 = 256;

/// The scheduler's state for one cluster.
#[derive(Debug)]
pub(crate) struct Sched {
    /// SplitMix64 state; `None` in the sequential schedule.
    rng: Option<u64>,
    /// In the priority schedule, the running cluster's warps' priorities
    /// (block-major) and how many warps were dropped so far.
    priorities: Option<(Vec<i64>, i64)>,
    /// With starvation: the starved warp (block-major) and the turn its
    /// stretch ends at the latest.
    starve: Option<(usize, u64)>,
    /// With starvation: the warps ready at the last pick (block-major).
    ready_before: Vec<usize>,
    /// Turns taken so far (the clock that random completions are due on).
    pub turn: u64,
    /// Under independent thread scheduling, the stream the warps' seeds
    /// come from.
    its: Option<u64>,
}

impl Sched {
    /// The choices for cluster `cluster` (its index in grid order) of a
    /// launch: its own stream of the seed, so that clusters run in any
    /// order, on any thread, make the same choices.
    pub fn new(o: &Options, cluster: u64) -> Sched {
        // Mixed once so that nearby seeds start far apart; the first
        // cluster's stream is the seed's own.
        let mix = |seed: u64| Some(seed ^ 0x5DEE_CE66_D1CE_4E5B ^ finalise(cluster));
        let (rng, priorities) = match o.schedule {
            Schedule::Sequential => (None, None),
            Schedule::Adversarial { seed } => (mix(seed), None),
            Schedule::Priority { seed } => (mix(seed), Some((Vec::new(), 0))),
        };
        let its = o
            .independent_threads
            .then(|| finalise(rng.unwrap_or(cluster) ^ 0x1D5_7EAD_5CED));
        Sched {
            starve: (o.starve && rng.is_some()).then_some((0, 0)),
            ready_before: Vec::new(),
            rng,
            priorities,
            turn: 0,
            its,
        }
    }

    /// The seed of the next warp's choices under independent thread
    /// scheduling (`None` without it); the warps of a cluster draw theirs
    /// in block-major order.
    pub fn warp_seed(&mut self) -> Option<u64> {
        let s = self.its.as_mut()?;
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        Some(finalise(*s))
    }

    /// Whether starvation is on (a warp's turn ends at its first
    /// asynchronous operation).
    pub fn starving(&self) -> bool {
        self.starve.is_some()
    }

    /// Whether this is the priority schedule.
    pub fn prioritised(&self) -> bool {
        self.priorities.is_some()
    }

    /// A new cluster of `warps` warps starts: in the priority schedule
    /// they get fresh random priorities; with starvation a new stretch
    /// starts at the next pick.
    pub fn start_cluster(&mut self, warps: usize) {
        if let Some(s) = &mut self.starve {
            *s = (0, 0);
            self.ready_before.clear();
        }
        if let Some((mut of, _)) = self.priorities.take() {
            of.clear();
            // Below 2^62: a dropped warp's negative priority is below all.
            of.extend((0..warps).map(|_| (self.next() >> 2) as i64));
            self.priorities = Some((of, 0));
        }
    }

    /// The warp to run next among `ready` (block, warp) pairs (not empty),
    /// blocks of `per_block` warps: the highest-priority one in the
    /// priority schedule, a random one in the adversarial schedule.
    pub fn pick(&mut self, ready: &[(usize, usize)], per_block: usize) -> (usize, usize) {
        if let Some((starved, until)) = self.starve {
            let now: Vec<usize> = ready.iter().map(|(b, w)| b * per_block + w).collect();
            // A stretch ends when a warp's wait completed (a new round of
            // a pipeline), or after STRETCH turns, at a choice between
            // warps.
            let woke = now.iter().any(|x| !self.ready_before.contains(x));
            let starved = if (woke || self.turn >= until) && now.len() > 1 {
                let starved = now[self.below(now.len())];
                self.starve = Some((starved, self.turn + STRETCH));
                starved
            } else {
                starved
            };
            self.ready_before = now;
            let fed: Vec<(usize, usize)> = ready
                .iter()
                .copied()
                .filter(|(b, w)| b * per_block + w != starved)
                .collect();
            if !fed.is_empty() {
                return self.pick_among(&fed, per_block);
            }
        }
        self.pick_among(ready, per_block)
    }

    fn pick_among(&mut self, ready: &[(usize, usize)], per_block: usize) -> (usize, usize) {
        match &self.priorities {
            Some((of, _)) => *ready
                .iter()
                .max_by_key(|(b, w)| of[b * per_block + w])
                .expect("a warp to run"),
            None => ready[self.below(ready.len())],
        }
    }

    /// Warp `w` of block `b` took a turn: in the priority schedule, at a
    /// change point it drops below every other warp.
    pub fn ran(&mut self, b: usize, w: usize, per_block: usize) {
        if self.priorities.is_some() && self.next().is_multiple_of(CHANGE_POINT) {
            let (of, dropped) = self.priorities.as_mut().expect("the priority schedule");
            *dropped += 1;
            of[b * per_block + w] = -*dropped;
        }
    }

    pub fn adversarial(&self) -> bool {
        self.rng.is_some()
    }

    /// Whether warp `w` of block `b` (blocks of `per_block` warps) is the
    /// starved one: it runs one instruction per turn, so that the others
    /// take over as soon as it lets them (its copy lands, its arrive
    /// completes a phase).
    pub fn starved(&self, b: usize, w: usize, per_block: usize) -> bool {
        self.starve.is_some_and(|(s, _)| s == b * per_block + w)
    }

    /// The next 64 random bits (SplitMix64).
    fn next(&mut self) -> u64 {
        let s = self.rng.as_mut().expect("the adversarial schedule");
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        finalise(*s)
    }

    /// A random index in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }

    /// How many instructions the next turn may run: a fixed slice, or
    /// 1 to 256 (each power of two equally likely), so that warps
    /// interleave at every granularity.
    pub fn slice(&mut self) -> u32 {
        if self.adversarial() {
            let scale = self.below(9) as u32;
            1 + self.below(1 << scale) as u32
        } else {
            SLICE
        }
    }

    /// The turn at which an asynchronous operation issued now completes
    /// by itself: `None` for the latest legal point (a wait that needs it,
    /// or nothing else of its block able to run), else a random turn soon
    /// after; with starvation, this turn (the earliest).
    pub fn due(&mut self) -> Option<u64> {
        if self.starve.is_some() {
            Some(self.turn)
        } else if self.next() & 1 == 0 {
            None
        } else {
            Some(self.turn + self.below(64) as u64)
        }
    }
}

/// The order in which the `clusters` clusters of a launch whose blocks
/// may communicate through global memory run, one after another: grid
/// order under the sequential schedule, otherwise a permutation drawn from
/// the seed (a GPU starts blocks in any order, so a block may read what a
/// later block in grid order released before that block starts).
pub(crate) fn cluster_order(o: &Options, clusters: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..clusters).collect();
    let seed = match o.schedule {
        Schedule::Sequential => return order,
        Schedule::Adversarial { seed } | Schedule::Priority { seed } => seed,
    };
    let mut state = seed ^ 0x0C1A_5DE4_0DE4;
    for i in (1..clusters).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        order.swap(i, (finalise(state) % (i as u64 + 1)) as usize);
    }
    order
}

/// SplitMix64's output function (0 for 0).
pub(crate) fn finalise(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communicating_clusters_run_in_grid_order_only_when_sequential() {
        assert_eq!(cluster_order(&Options::sequential(), 5), [0, 1, 2, 3, 4]);
        let orders: Vec<Vec<usize>> = (0..8)
            .map(|seed| cluster_order(&Options::adversarial(seed), 5))
            .collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4], "a permutation");
        }
        assert!(
            orders.iter().any(|o| o[0] > o[4]),
            "some seed runs a later cluster first"
        );
        assert_eq!(
            cluster_order(&Options::priority(3), 5),
            cluster_order(&Options::adversarial(3), 5)
        );
    }

    #[test]
    fn the_same_seed_makes_the_same_choices() {
        let mut a = Sched::new(&Options::adversarial(3), 0);
        let mut b = Sched::new(&Options::adversarial(3), 0);
        let mut c = Sched::new(&Options::adversarial(4), 0);
        let pick = |s: &mut Sched| (0..64).map(|_| (s.slice(), s.due(), s.below(7))).collect::<Vec<_>>();
        let first = pick(&mut a);
        assert_eq!(first, pick(&mut b));
        assert_ne!(first, pick(&mut c));
        assert!(first.iter().all(|&(s, _, k)| (1..=256).contains(&s) && k < 7));
        assert!(first.iter().any(|&(_, d, _)| d.is_none()) && first.iter().any(|&(_, d, _)| d.is_some()));
        let mut seq = Sched::new(&Options::sequential(), 0);
        assert!(!seq.adversarial());
        assert_eq!(seq.slice(), SLICE);
    }

    #[test]
    fn starvation_passes_one_warp_over_for_a_stretch_and_completes_at_once() {
        let ready: Vec<(usize, usize)> = (0..2).flat_map(|b| (0..2).map(move |w| (b, w))).collect();
        let mut s = Sched::new(&Options::adversarial(7).with_starvation(), 0);
        s.start_cluster(4);
        let mut starved = Vec::new();
        for _ in 0..8 {
            let mut picked = std::collections::HashSet::new();
            for _ in 0..STRETCH {
                picked.insert(s.pick(&ready, 2));
                assert_eq!(s.due(), Some(s.turn));
                s.turn += 1;
            }
            assert_eq!(picked.len(), 3, "all but the starved warp run: {picked:?}");
            let (b, w) = *ready.iter().find(|r| !picked.contains(r)).expect("a starved warp");
            assert!(s.starved(b, w, 2));
            starved.push((b, w));
        }
        assert!(
            starved.iter().collect::<std::collections::HashSet<_>>().len() > 1,
            "{starved:?}"
        );
        // The starved warp runs when it is the only one ready.
        let (b, w) = *starved.last().expect("a starved warp");
        assert_eq!(s.pick(&[(b, w)], 2), (b, w));
        // The sequential schedule ignores the option.
        let seq = Sched::new(&Options::sequential().with_starvation(), 0);
        assert!(seq.starve.is_none());
    }

    #[test]
    fn the_priority_schedule_runs_the_highest_ready_warp_until_a_change_point() {
        // 2 blocks of 3 warps, all ready.
        let ready: Vec<(usize, usize)> = (0..2).flat_map(|b| (0..3).map(move |w| (b, w))).collect();
        let mut s = Sched::new(&Options::priority(5), 0);
        assert!(
            s.adversarial(),
            "asynchronous completions as in the adversarial schedule"
        );
        s.start_cluster(6);
        let first = s.pick(&ready, 3);
        let mut changes = 0;
        let mut current = first;
        for _ in 0..20 * CHANGE_POINT {
            let next = s.pick(&ready, 3);
            if next != current {
                changes += 1;
                current = next;
            }
            s.ran(current.0, current.1, 3);
        }
        // The same warp keeps the turns between change points (one in
        // CHANGE_POINT turns on average drops the running warp).
        assert!((5..=60).contains(&changes), "{changes} changes of the running warp");
        // A warp that cannot run is passed over for the next highest.
        let without: Vec<_> = ready.iter().copied().filter(|&r| r != current).collect();
        let second = s.pick(&without, 3);
        assert_ne!(second, current);
        // The same seed makes the same choices; a new cluster, new ones.
        let mut t = Sched::new(&Options::priority(5), 0);
        t.start_cluster(6);
        assert_eq!(t.pick(&ready, 3), first);
        let firsts: std::collections::HashSet<_> = (0..16)
            .map(|_| {
                t.start_cluster(6);
                t.pick(&ready, 3)
            })
            .collect();
        assert!(firsts.len() > 2, "new priorities per cluster: {firsts:?}");
    }
}
