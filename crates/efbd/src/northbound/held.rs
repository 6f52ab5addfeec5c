//! Sessions held by their clients: OpenSession's stream lives as long as the session. When
//! the client goes (a shell killed, its output piped into `head`), the stream's receiver is
//! dropped and the session is closed at once; when efbd closes a session for another
//! reason (an admin's logout, the idle timeout), the stream gets a last notice saying why
//! and ends, so the shell can tell its user.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use efb_datastore::SessionId;
use efb_mgmt_proto::v1::SessionNotice;
use efb_northbound::Role;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// What a holder's stream is told when its session ends under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The holder closed it itself: nothing to tell.
    Quietly,
    /// Closed by efbd (the idle timeout): why.
    Closed(String),
    /// An admin logged it out: who, and what was lost.
    LoggedOut(String),
}

/// The streams of the open client sessions, by session, and their holders' roles.
#[derive(Clone, Default)]
pub struct HeldSessions {
    ends: Arc<Mutex<HashMap<SessionId, Holding>>>,
}

/// What ends a held session's stream, and the role of its holder.
type Holding = (oneshot::Sender<Ending>, Option<Role>);

/// The stream OpenSession answers with.
pub type NoticeStream = ReceiverStream<Result<SessionNotice, Status>>;

impl HeldSessions {
    /// The stream of a session just opened: it names `session` first. `close` runs (with
    /// why, "closed: ...") when the client drops the stream before efbd ended it, or when
    /// `revoked` completes with a reason (its holder lost the role to hold it: the stream
    /// is told and ends); nothing runs when efbd stops (`stopping` turns true).
    pub fn hold<F>(
        &self,
        session: SessionId,
        role: Option<Role>,
        mut stopping: Option<watch::Receiver<bool>>,
        revoked: impl Future<Output = String> + Send + 'static,
        close: impl FnOnce(String) -> F + Send + 'static,
    ) -> NoticeStream
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel(2);
        // Room for two: this one cannot fail.
        let _ = sender.try_send(Ok(SessionNotice {
            session,
            ..SessionNotice::default()
        }));
        let (end, ended) = oneshot::channel();
        if let Ok(mut ends) = self.ends.lock() {
            ends.insert(session, (end, role));
        }
        let ends = self.ends.clone();
        tokio::spawn(async move {
            let still_held = || ends.lock().is_ok_and(|mut e| e.remove(&session).is_some());
            tokio::select! {
                () = sender.closed() => {
                    if still_held() {
                        close("closed: its client went away".to_string()).await;
                    }
                }
                why = revoked => {
                    if still_held() {
                        close(format!("closed: {why}")).await;
                        let _ = sender.send(Ok(logged_out(session, why))).await;
                    }
                }
                ending = ended => {
                    if let Some(last) = ending.ok().and_then(|e| notice(session, e)) {
                        let _ = sender.send(Ok(last)).await;
                    }
                }
                () = stopped(&mut stopping) => {}
            }
        });
        ReceiverStream::new(receiver)
    }

    /// `session` was closed by efbd: its holder's stream says `why` (if anything) and ends.
    /// The holder's role, if the session was held.
    pub fn end(&self, session: SessionId, why: Ending) -> Option<Role> {
        let (end, role) = self.ends.lock().ok().and_then(|mut e| e.remove(&session))?;
        let _ = end.send(why);
        role
    }
}

/// The last notice of a stream, if there is anything to tell.
fn notice(session: SessionId, ending: Ending) -> Option<SessionNotice> {
    match ending {
        Ending::Quietly => None,
        Ending::Closed(closed) => Some(SessionNotice {
            session,
            closed,
            logout: false,
        }),
        Ending::LoggedOut(why) => Some(logged_out(session, why)),
    }
}

/// The notice of a session efbd ended for good: its client should end too.
fn logged_out(session: SessionId, why: String) -> SessionNotice {
    SessionNotice {
        session,
        closed: why,
        logout: true,
    }
}

/// Completes when efbd stops (never without a signal to wait for): held streams and
/// watched events end then.
pub(crate) async fn stopped(stopping: &mut Option<watch::Receiver<bool>>) {
    match stopping {
        Some(receiver) => {
            let _ = receiver.wait_for(|stop| *stop).await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use tokio_stream::StreamExt;

    use super::*;

    #[tokio::test]
    async fn a_dropped_stream_closes_its_session_and_an_ended_one_says_why() {
        let held = HeldSessions::default();
        let gone = Arc::new(AtomicBool::new(false));
        let flag = gone.clone();
        let mut stream = held.hold(7, None, None, std::future::pending(), move |_| async move {
            flag.store(true, Ordering::SeqCst);
        });
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!((first.session, first.closed.as_str()), (7, ""));
        drop(stream);
        for _ in 0..100 {
            if gone.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone.load(Ordering::SeqCst), "the client went: closed");

        let gone = Arc::new(AtomicBool::new(false));
        let flag = gone.clone();
        let mut stream = held.hold(8, None, None, std::future::pending(), move |_| async move {
            flag.store(true, Ordering::SeqCst);
        });
        stream.next().await.unwrap().unwrap();
        held.end(8, Ending::LoggedOut("logged out by root".into()));
        let last = stream.next().await.unwrap().unwrap();
        assert_eq!(last.closed, "logged out by root");
        assert!(last.logout);
        assert!(stream.next().await.is_none(), "and the stream ends");
        assert!(
            !gone.load(Ordering::SeqCst),
            "efbd closed it, not the client"
        );
    }
}
