//! The door's book of connections: how many it may hold, which one gives way when it is full
//! (the one that has waited longest without a request in flight), and each one's deadline.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Open files kept for everything else the process does: the workers' git repositories and
/// sandboxed commands, the job store, log files, and the connections answered 503.
pub const FD_RESERVE: u64 = 256;

/// Connections answered 503 at once, on top of the cap; beyond that the door stops accepting
/// until one closes (new connections then wait in the kernel's backlog).
pub const REFUSALS_AT_ONCE: usize = 32;

/// The most connections to hold: `configured`, lowered so that the process stays
/// [`FD_RESERVE`] open files below its soft limit (a quarter of a very low limit at least).
pub fn connection_cap(configured: usize, open_files_soft_limit: u64) -> usize {
    let room = open_files_soft_limit
        .saturating_sub(FD_RESERVE)
        .max(open_files_soft_limit / 4);
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .min(configured)
        .max(1)
}

/// Why the door closed a connection itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its first request's headers did not arrive in full within `header_read_timeout`.
    HeaderTimeout,
    /// It sent no further request within `idle_timeout` of the last answer.
    IdleTimeout,
    /// It was waiting, the door was full, and a newer connection needed its place.
    Evicted,
}

/// What the door does with a connection it has just accepted.
#[derive(Debug)]
pub enum Admission {
    /// Serve it; `evicted` says whether an older waiting connection was told to give way.
    Serve { ticket: Ticket, evicted: bool },
    /// Every place is taken by a request in flight: answer 503 and close.
    Refuse,
}

/// A connection's place in the book: its id, and the signal that wakes its task when its
/// deadline changes or it must give way.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: u64,
    pub wake: Arc<Notify>,
}

#[derive(Debug)]
enum Phase {
    /// No request in flight: closed at `until` unless a request starts first. `turn` orders
    /// the waiting connections, oldest first.
    Waiting {
        turn: u64,
        until: Instant,
        then: Ending,
    },
    /// The router holds a request of this connection; no deadline of the door's applies.
    InRequest,
    /// Told to close; its task has not closed it yet.
    Evicted,
}

#[derive(Debug)]
struct Entry {
    phase: Phase,
    wake: Arc<Notify>,
}

/// The connections the door holds. Plain data, locked by the door, told the time by its caller.
#[derive(Debug)]
pub struct Slots {
    cap: usize,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    next_id: u64,
    next_turn: u64,
    entries: HashMap<u64, Entry>,
    /// The waiting connections by turn: the first one is the next to give way.
    waiting: BTreeMap<u64, u64>,
    /// Entries told to close whose sockets are still open.
    evicted: usize,
    /// Connections being answered 503.
    refusing: usize,
}

impl Slots {
    pub fn new(cap: usize, header_read_timeout: Duration, idle_timeout: Duration) -> Slots {
        Slots {
            cap: cap.max(1),
            header_read_timeout,
            idle_timeout,
            next_id: 0,
            next_turn: 0,
            entries: HashMap::new(),
            waiting: BTreeMap::new(),
            evicted: 0,
            refusing: 0,
        }
    }

    /// Whether one more socket may be accepted: every socket the door holds (served, evicted
    /// but not yet closed, being refused) stays below the cap plus [`REFUSALS_AT_ONCE`].
    pub fn has_room(&self) -> bool {
        self.entries.len() + self.refusing < self.cap.saturating_add(REFUSALS_AT_ONCE)
    }

    /// Places a connection accepted `now`: in a free place, in the place of the connection that
    /// has waited longest without a request, or nowhere (it is answered 503).
    pub fn admit(&mut self, now: Instant) -> Admission {
        let mut evicted = false;
        if self.entries.len() - self.evicted >= self.cap {
            let Some((_, victim)) = self.waiting.pop_first() else {
                self.refusing += 1;
                return Admission::Refuse;
            };
            if let Some(entry) = self.entries.get_mut(&victim) {
                entry.phase = Phase::Evicted;
                entry.wake.notify_one();
                self.evicted += 1;
                evicted = true;
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let wake = Arc::new(Notify::new());
        self.entries.insert(
            id,
            Entry {
                // Replaced at once by its first deadline.
                phase: Phase::InRequest,
                wake: wake.clone(),
            },
        );
        self.wait(id, now + self.header_read_timeout, Ending::HeaderTimeout);
        Admission::Serve {
            ticket: Ticket { id, wake },
            evicted,
        }
    }

    /// Connection `id` has a whole request head and the router has the request.
    pub fn request_started(&mut self, id: u64) {
        if let Some(entry) = self.entries.get_mut(&id)
            && let Phase::Waiting { turn, .. } = entry.phase
        {
            self.waiting.remove(&turn);
            entry.phase = Phase::InRequest;
        }
    }

    /// The router answered connection `id` at `now`: it waits for its next request.
    pub fn request_finished(&mut self, id: u64, now: Instant) {
        let in_request = self
            .entries
            .get(&id)
            .is_some_and(|entry| matches!(entry.phase, Phase::InRequest));
        if in_request {
            self.wait(id, now + self.idle_timeout, Ending::IdleTimeout);
            if let Some(entry) = self.entries.get(&id) {
                entry.wake.notify_one();
            }
        }
    }

    fn wait(&mut self, id: u64, until: Instant, then: Ending) {
        let turn = self.next_turn;
        self.next_turn += 1;
        if let Some(entry) = self.entries.get_mut(&id) {
            if let Phase::Waiting { turn: old, .. } = entry.phase {
                self.waiting.remove(&old);
            }
            entry.phase = Phase::Waiting { turn, until, then };
            self.waiting.insert(turn, id);
        }
    }

    /// When connection `id` is to be closed if nothing changes: `None` while a request is in
    /// flight, at once when it was told to give way.
    pub fn deadline(&self, id: u64, now: Instant) -> Option<Instant> {
        match self.entries.get(&id)?.phase {
            Phase::Waiting { until, .. } => Some(until),
            Phase::InRequest => None,
            Phase::Evicted => Some(now),
        }
    }

    /// Why connection `id` must be closed `now`, if it must.
    pub fn ending(&self, id: u64, now: Instant) -> Option<Ending> {
        match self.entries.get(&id)?.phase {
            Phase::Waiting { until, then, .. } if until <= now => Some(then),
            Phase::Waiting { .. } | Phase::InRequest => None,
            Phase::Evicted => Some(Ending::Evicted),
        }
    }

    /// Connection `id`'s socket is closed: its place is free.
    pub fn closed(&mut self, id: u64) {
        if let Some(entry) = self.entries.remove(&id) {
            match entry.phase {
                Phase::Waiting { turn, .. } => {
                    self.waiting.remove(&turn);
                }
                Phase::Evicted => self.evicted -= 1,
                Phase::InRequest => {}
            }
        }
    }

    /// A connection answered 503 is closed.
    pub fn refusal_finished(&mut self) {
        self.refusing = self.refusing.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_secs(10);
    const IDLE: Duration = Duration::from_secs(60);

    /// Connections served, including those told to close whose sockets are still open.
    fn open(slots: &Slots) -> usize {
        slots.entries.len()
    }

    fn served(admission: Admission) -> (u64, bool) {
        match admission {
            Admission::Serve { ticket, evicted } => (ticket.id, evicted),
            Admission::Refuse => panic!("refused"),
        }
    }

    #[test]
    fn the_cap_keeps_the_reserve_below_the_open_files_limit() {
        assert_eq!(connection_cap(1024, 1024), 768);
        assert_eq!(connection_cap(1024, 65536), 1024);
        assert_eq!(connection_cap(100, 65536), 100);
        assert_eq!(
            connection_cap(1024, 300),
            75,
            "a quarter of a very low limit"
        );
        assert_eq!(connection_cap(1024, 0), 1);
        assert_eq!(connection_cap(2048, libc::RLIM_INFINITY), 2048);
    }

    #[test]
    fn a_full_door_makes_room_by_closing_the_connection_that_waited_longest() {
        let start = Instant::now();
        let mut slots = Slots::new(3, HEADER, IDLE);
        let (first, _) = served(slots.admit(start));
        let (second, _) = served(slots.admit(start));
        let (third, _) = served(slots.admit(start));
        // The first one sends a request: it is no longer what an attacker holds.
        slots.request_started(first);
        let (fourth, evicted) = served(slots.admit(start));
        assert!(evicted);
        assert_eq!(slots.ending(second, start), Some(Ending::Evicted));
        assert_eq!(slots.ending(first, start), None);
        assert_eq!(slots.ending(third, start), None);
        assert_eq!(slots.ending(fourth, start), None);
        // Until its task closes it, the evicted socket still counts against the accept gate.
        assert_eq!(open(&slots), 4);
        slots.closed(second);
        assert_eq!(open(&slots), 3);
        let (_, evicted) = served(slots.admit(start));
        assert!(evicted);
        assert_eq!(slots.ending(third, start), Some(Ending::Evicted));
    }

    #[test]
    fn an_answered_connection_waits_again_behind_the_others() {
        let start = Instant::now();
        let mut slots = Slots::new(2, HEADER, IDLE);
        let (first, _) = served(slots.admit(start));
        slots.request_started(first);
        let (second, _) = served(slots.admit(start));
        slots.request_finished(first, start + Duration::from_secs(1));
        served(slots.admit(start));
        assert_eq!(slots.ending(second, start), Some(Ending::Evicted));
        assert_eq!(slots.ending(first, start), None);
    }

    #[test]
    fn when_every_place_is_in_a_request_the_newcomer_is_refused() {
        let start = Instant::now();
        let mut slots = Slots::new(2, HEADER, IDLE);
        for _ in 0..2 {
            let (id, _) = served(slots.admit(start));
            slots.request_started(id);
        }
        assert!(matches!(slots.admit(start), Admission::Refuse));
        for _ in 1..REFUSALS_AT_ONCE {
            assert!(slots.has_room());
            assert!(matches!(slots.admit(start), Admission::Refuse));
        }
        assert!(!slots.has_room(), "the 503 answers have their own bound");
        slots.refusal_finished();
        assert!(slots.has_room());
    }

    #[test]
    fn a_connection_has_the_header_deadline_first_and_the_idle_deadline_after_an_answer() {
        let start = Instant::now();
        let mut slots = Slots::new(4, HEADER, IDLE);
        let (id, _) = served(slots.admit(start));
        assert_eq!(slots.deadline(id, start), Some(start + HEADER));
        assert_eq!(
            slots.ending(id, start + HEADER - Duration::from_millis(1)),
            None
        );
        assert_eq!(
            slots.ending(id, start + HEADER),
            Some(Ending::HeaderTimeout)
        );
        slots.request_started(id);
        assert_eq!(slots.deadline(id, start), None);
        assert_eq!(
            slots.ending(id, start + IDLE * 10),
            None,
            "no deadline in a request"
        );
        let answered = start + Duration::from_secs(3);
        slots.request_finished(id, answered);
        assert_eq!(slots.deadline(id, answered), Some(answered + IDLE));
        assert_eq!(slots.ending(id, answered + IDLE), Some(Ending::IdleTimeout));
    }

    #[test]
    fn a_closed_connection_frees_its_place_whatever_its_phase() {
        let start = Instant::now();
        let mut slots = Slots::new(2, HEADER, IDLE);
        let (waiting, _) = served(slots.admit(start));
        let (busy, _) = served(slots.admit(start));
        slots.request_started(busy);
        slots.closed(waiting);
        slots.closed(busy);
        assert_eq!(open(&slots), 0);
        let (id, evicted) = served(slots.admit(start));
        assert!(!evicted);
        slots.closed(id);
        // A late answer or a second close of a gone connection changes nothing.
        slots.request_finished(id, start);
        slots.closed(id);
        assert_eq!(open(&slots), 0);
    }
}
