//! Which data directories a server accepts (server/src/identity.rs): the cluster file, and the
//! decision for a member with no data from what its peers answer.

use std::path::Path;

use paddock::config::Config;
use paddock::identity::{self, decide, decide_fresh, Decision, Fresh, Identity, Mode, PeerAnswer};

fn ensemble(my_id: u64) -> Config {
    let text = "tickTime=2000\ndataDir=/tmp/x\nclientPort=2181\n\
                server.1=10.0.0.1:2888:3888\nserver.2=10.0.0.2:2888:3888\nserver.3=10.0.0.3:2888:3888\n\
                server.4=10.0.0.4:2888:3888:observer\n";
    let mut cfg = Config::parse_zoo_cfg(text, Path::new("zoo.cfg")).unwrap();
    cfg.my_id = Some(my_id);
    cfg
}

fn standalone() -> Config {
    Config::parse_zoo_cfg("dataDir=/tmp/x\nclientPort=2181\n", Path::new("zoo.cfg")).unwrap()
}

fn answer(id: u64, cfg: &Config, initialized: bool) -> PeerAnswer {
    PeerAnswer {
        id,
        cluster_id: identity::cluster_id_of(cfg),
        initialized,
    }
}

#[test]
fn the_cluster_file_round_trips_and_rejects_damage() {
    let id = Identity {
        cluster_id: 0x0123_4567_89ab_cdef,
        member_id: 3,
        incarnation: 0xfeed,
        mode: Mode::Ensemble,
    };
    let text = id.render();
    assert_eq!(
        text,
        "# Written by paddock when this data directory was created; do not edit.\n\
         cluster_id=0123456789abcdef\nmember_id=3\nincarnation=000000000000feed\nmode=ensemble\n"
    );
    assert_eq!(Identity::parse(&text), Ok(id.clone()));
    assert_eq!(
        Identity::parse("cluster_id=zz\nmember_id=1\nincarnation=1\nmode=ensemble\n"),
        Err("bad cluster_id \"zz\"".to_string())
    );
    assert_eq!(
        Identity::parse("cluster_id=1\nincarnation=1\nmode=ensemble\n"),
        Err("no member_id".to_string())
    );
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(Identity::read(dir.path()), Ok(None));
    id.write(dir.path()).unwrap();
    assert_eq!(Identity::read(dir.path()), Ok(Some(id)));
}

#[test]
fn members_of_one_ensemble_agree_on_the_cluster_id_and_other_configs_differ() {
    let a = identity::cluster_id_of(&ensemble(1));
    assert_eq!(
        a,
        identity::cluster_id_of(&ensemble(2)),
        "myid is not part of it"
    );
    let mut other = ensemble(1);
    other.servers[2].peer_port = 2889;
    assert_ne!(a, identity::cluster_id_of(&other));
    assert_ne!(a, identity::cluster_id_of(&standalone()));
}

#[test]
fn a_standalone_data_dir_is_refused_by_an_ensemble_and_the_reverse() {
    let cfg = ensemble(1);
    let mut stored = Identity::new_for(&standalone());
    stored.member_id = 1;
    match decide(&cfg, Some(stored), true) {
        Decision::Refuse(why) => assert!(
            why.starts_with("this data directory was created by a standalone server"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    // A log from before cluster files existed is a standalone server's.
    match decide(&cfg, None, true) {
        Decision::Refuse(why) => assert!(
            why.contains("holds a log from a standalone server"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let member = Identity::new_for(&cfg);
    match decide(&standalone(), Some(member), true) {
        Decision::Refuse(why) => assert!(
            why.starts_with("this data directory belongs to member 1 of an ensemble"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn another_members_data_dir_or_a_lost_log_is_refused() {
    let stored = Identity::new_for(&ensemble(2));
    match decide(&ensemble(1), Some(stored.clone()), true) {
        Decision::Refuse(why) => assert_eq!(
            why,
            "this data directory belongs to member 2 (myid is 1); each member needs its own dataDir"
        ),
        other => panic!("{other:?}"),
    }
    match decide(&ensemble(2), Some(stored.clone()), false) {
        Decision::Refuse(why) => assert!(
            why.contains("the raft log beside it is missing or empty"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        decide(&ensemble(2), Some(stored.clone()), true),
        Decision::Resume(stored)
    );
}

#[test]
fn empty_data_dirs_bootstrap_standalone_at_once_and_ask_peers_in_an_ensemble() {
    match decide(&standalone(), None, false) {
        Decision::Bootstrap(id) => assert_eq!((id.mode, id.member_id), (Mode::Standalone, 1)),
        other => panic!("{other:?}"),
    }
    match decide(&standalone(), None, true) {
        Decision::Adopt(id) => assert_eq!(id.mode, Mode::Standalone),
        other => panic!("{other:?}"),
    }
    assert_eq!(decide(&ensemble(1), None, false), Decision::AskPeers);
}

#[test]
fn a_fresh_member_bootstraps_only_with_a_majority_of_empty_voters() {
    let cfg = ensemble(1);
    // Alone: 1 of 3 voters known empty.
    assert_eq!(decide_fresh(&cfg, &[]), Fresh::Wait);
    // The observer does not count towards the voters' majority.
    assert_eq!(decide_fresh(&cfg, &[answer(4, &cfg, false)]), Fresh::Wait);
    assert_eq!(
        decide_fresh(&cfg, &[answer(2, &cfg, false)]),
        Fresh::Bootstrap
    );
    // A wiped member whose peer already has a log joins instead, whoever else is empty.
    assert_eq!(
        decide_fresh(&cfg, &[answer(2, &cfg, false), answer(3, &cfg, true)]),
        Fresh::Join {
            cluster_id: identity::cluster_id_of(&cfg)
        }
    );
    assert_eq!(
        decide_fresh(&cfg, &[answer(4, &cfg, true)]),
        Fresh::Join {
            cluster_id: identity::cluster_id_of(&cfg)
        }
    );
    // An observer with no data never counts itself.
    let obs = ensemble(4);
    assert_eq!(decide_fresh(&obs, &[answer(1, &obs, false)]), Fresh::Wait);
    assert_eq!(
        decide_fresh(&obs, &[answer(1, &obs, false), answer(2, &obs, false)]),
        Fresh::Bootstrap
    );
}

#[test]
fn a_peer_of_another_cluster_is_refused() {
    let cfg = ensemble(1);
    // A new ensemble whose members' server lines differ: nobody has data to follow.
    let foreign = PeerAnswer {
        id: 2,
        cluster_id: 42,
        initialized: false,
    };
    match decide_fresh(&cfg, &[foreign]) {
        Fresh::Refuse(why) => assert!(
            why.starts_with("member 2 belongs to cluster 000000000000002a"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    // Members with data that belong to two clusters: no one to join.
    let with_data = |id, cluster_id| PeerAnswer {
        id,
        cluster_id,
        initialized: true,
    };
    match decide_fresh(&cfg, &[with_data(2, 42), with_data(3, 43)]) {
        Fresh::Refuse(why) => assert_eq!(
            why,
            "members 2 and 3 belong to different clusters (000000000000002a, 000000000000002b)"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_reconfig_a_fresh_member_of_a_longer_server_list_takes_the_ensembles_id() {
    // ZooKeeper's rolling restart: members 4 and 5 start, empty, with five server lines while
    // 1, 2 and 3 still run with their data and the three lines their cluster id came from.
    let cfg = ensemble(1);
    assert!(!cfg.reconfig_enabled);
    let old = PeerAnswer {
        id: 2,
        cluster_id: 42,
        initialized: true,
    };
    let other_new = PeerAnswer {
        id: 5,
        cluster_id: identity::cluster_id_of(&cfg),
        initialized: false,
    };
    assert_eq!(
        decide_fresh(&cfg, &[old, other_new]),
        Fresh::Join { cluster_id: 42 }
    );
}

#[test]
fn with_reconfig_a_fresh_member_takes_the_ensembles_cluster_id() {
    // A member added by reconfig lists the current members plus itself: its own lines imply
    // another id than the initial ones did.
    let mut cfg = ensemble(5);
    cfg.reconfig_enabled = true;
    let existing = |id| PeerAnswer {
        id,
        cluster_id: 42,
        initialized: true,
    };
    assert_eq!(
        decide_fresh(&cfg, &[existing(1), existing(2)]),
        Fresh::Join { cluster_id: 42 }
    );
    // Peers that disagree among themselves are refused.
    let other = PeerAnswer {
        id: 3,
        cluster_id: 43,
        initialized: true,
    };
    match decide_fresh(&cfg, &[existing(1), other]) {
        Fresh::Refuse(why) => assert_eq!(
            why,
            "members 1 and 3 belong to different clusters (000000000000002a, 000000000000002b)"
        ),
        other => panic!("{other:?}"),
    }
    // Empty foreign peers are still refused: there is no ensemble to join.
    let empty = PeerAnswer {
        id: 2,
        cluster_id: 42,
        initialized: false,
    };
    assert!(matches!(decide_fresh(&cfg, &[empty]), Fresh::Refuse(_)));
}

/// The settings fingerprint, which peers exchange in the hello, says whether two members would
/// apply the same log to the same tree, and nothing more: the super digest (a SHA-1 of the super
/// password, guessable offline) is not hashed into it, while the settings that change apply are.
/// Its value without a super digest is the one older paddock members compute, so they still agree
/// during a rolling upgrade of the binary.
#[test]
fn the_fingerprint_covers_apply_settings_and_not_the_super_digest() {
    let base = "tickTime=2000\ndataDir=/tmp/x\nclientPort=2181\n";
    let fp = |extra: &str| {
        identity::fingerprint_of(
            &Config::parse_zoo_cfg(&format!("{base}{extra}"), Path::new("zoo.cfg")).unwrap(),
        )
    };
    let plain = fp("");
    assert_eq!(
        plain,
        fp("DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n")
    );
    assert_ne!(plain, fp("skipACL=yes\n"));
    assert_ne!(plain, fp("enforceQuota=true\n"));
    assert_ne!(plain, fp("extendedTypesEnabled=true\n"));
    assert_ne!(plain, fp("letAnySaslUserDoX=anyone\n"));
    // FNV-1a of the text every paddock since the fingerprint's introduction has hashed for a
    // config without these keys.
    let text = "extended_types=false\nenforce_quota=false\nskip_acl=false\nsuper_digest=None\n\
                let_any_sasl_user_do_x=None\n";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!(plain, h);
}
