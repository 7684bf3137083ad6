//! digest authentication and ACLs: the creator's digest id, NoAuth for everyone else, read-only ACLs,
//! masking of digest ids without ADMIN, aversion, and whoAmI.

use anyhow::Result;
use base64::Engine;
use sha1::{Digest, Sha1};

use crate::support::{eq, expect_err, persistent, Ctx};
use zookeeper_client::{Acl, Acls, AuthId, AuthUser, CreateMode, Error, Permission};

/// The id ZooKeeper's DigestAuthenticationProvider makes of `user:password`: `user:base64(sha1(user:password))`.
fn digest_id(user: &str, password: &str) -> String {
    let hash = Sha1::digest(format!("{user}:{password}").as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

pub async fn digest_creator_acl(ctx: Ctx, base: String) -> Result<()> {
    let alice = ctx.connect().await?;
    alice.auth("digest", b"alice:secret").await?;
    let anon = ctx.connect().await?;
    let path = format!("{base}/secret");
    alice
        .create(
            &path,
            b"s",
            &CreateMode::Persistent.with_acls(Acls::creator_all()),
        )
        .await?;
    let (acl, stat) = alice.get_acl(&path).await?;
    let want = vec![Acl::new(
        Permission::ALL,
        AuthId::new("digest", &digest_id("alice", "secret")),
    )];
    eq("ACL of a creator_all node", acl, want)?;
    eq("aversion", stat.aversion, 0)?;
    eq(
        "creator reads",
        alice.get_data(&path).await?.0,
        b"s".to_vec(),
    )?;

    expect_err(
        "anonymous getData",
        anon.get_data(&path).await,
        Error::NoAuth,
    )?;
    expect_err(
        "anonymous setData",
        anon.set_data(&path, b"x", None).await,
        Error::NoAuth,
    )?;
    expect_err("anonymous getACL", anon.get_acl(&path).await, Error::NoAuth)?;
    // Since 3.9.2, exists on an existing node needs READ too.
    expect_err(
        "anonymous exists",
        anon.check_stat(&path).await,
        Error::NoAuth,
    )?;
    expect_err(
        "anonymous getChildren",
        anon.list_children(&path).await,
        Error::NoAuth,
    )?;
    expect_err(
        "anonymous create child",
        anon.create(&format!("{path}/c"), b"", &persistent()).await,
        Error::NoAuth,
    )?;
    // creator_all with no authenticated id to expand into.
    expect_err(
        "anonymous creator_all create",
        anon.create(
            &format!("{base}/anon"),
            b"",
            &CreateMode::Persistent.with_acls(Acls::creator_all()),
        )
        .await,
        Error::InvalidAcl,
    )?;

    let again = ctx.connect().await?;
    again.auth("digest", b"alice:secret").await?;
    eq(
        "same user, new session",
        again.set_data(&path, b"t", Some(0)).await?.version,
        1,
    )?;
    // A wrong password authenticates as a different digest id, which the ACL does not name.
    let mallory = ctx.connect().await?;
    mallory.auth("digest", b"alice:wrong").await?;
    expect_err(
        "wrong password getData",
        mallory.get_data(&path).await,
        Error::NoAuth,
    )?;
    Ok(())
}

pub async fn world_read_only_acl(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/ro");
    zk.create(
        &path,
        b"r",
        &CreateMode::Persistent.with_acls(Acls::anyone_read()),
    )
    .await?;
    eq("getData", zk.get_data(&path).await?.0, b"r".to_vec())?;
    eq(
        "getACL",
        zk.get_acl(&path).await?.0,
        vec![Acl::new(Permission::READ, AuthId::new("world", "anyone"))],
    )?;
    expect_err(
        "setData",
        zk.set_data(&path, b"x", None).await,
        Error::NoAuth,
    )?;
    expect_err(
        "create child",
        zk.create(&format!("{path}/c"), b"", &persistent()).await,
        Error::NoAuth,
    )?;
    expect_err(
        "setACL",
        zk.set_acl(&path, &Acls::anyone_all(), None).await,
        Error::NoAuth,
    )?;

    // READ without ADMIN: getACL answers, but digest ids are masked.
    let alice = ctx.connect().await?;
    alice.auth("digest", b"alice:secret").await?;
    let mixed = format!("{base}/mixed");
    let acls = [
        Acl::new(
            Permission::ALL,
            AuthId::new("digest", &digest_id("alice", "secret")),
        ),
        Acl::new(Permission::READ, AuthId::new("world", "anyone")),
    ];
    alice
        .create(
            &mixed,
            b"",
            &CreateMode::Persistent.with_acls(Acls::new(&acls)),
        )
        .await?;
    eq(
        "getACL with ADMIN",
        alice.get_acl(&mixed).await?.0,
        acls.to_vec(),
    )?;
    let masked = vec![
        Acl::new(Permission::ALL, AuthId::new("digest", "alice:x")),
        Acl::new(Permission::READ, AuthId::new("world", "anyone")),
    ];
    eq("getACL without ADMIN", zk.get_acl(&mixed).await?.0, masked)?;
    Ok(())
}

pub async fn set_acl_versions(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    let (created, _) = zk.create(&path, b"", &persistent()).await?;
    let stat = zk.set_acl(&path, &Acls::anyone_all(), Some(0)).await?;
    eq("aversion after setACL", stat.aversion, 1)?;
    eq("version unchanged by setACL", stat.version, 0)?;
    eq("mzxid unchanged by setACL", stat.mzxid, created.mzxid)?;
    expect_err(
        "setACL with the old aversion",
        zk.set_acl(&path, &Acls::anyone_all(), Some(0)).await,
        Error::BadVersion,
    )?;
    let read_write = [Acl::new(
        Permission::READ | Permission::WRITE,
        AuthId::new("world", "anyone"),
    )];
    eq(
        "aversion after second setACL",
        zk.set_acl(&path, &read_write, Some(1)).await?.aversion,
        2,
    )?;
    let (acl, stat) = zk.get_acl(&path).await?;
    eq("ACL after setACL", acl, read_write.to_vec())?;
    eq("getACL aversion", stat.aversion, 2)?;
    eq(
        "write still allowed",
        zk.set_data(&path, b"w", None).await?.version,
        1,
    )?;
    expect_err(
        "setACL without ADMIN",
        zk.set_acl(&path, &Acls::anyone_all(), None).await,
        Error::NoAuth,
    )?;
    expect_err(
        "setACL with no entries",
        zk.set_acl(&base, &[], None).await,
        Error::InvalidAcl,
    )?;
    Ok(())
}

pub async fn whoami_lists_auth(ctx: Ctx, _base: String) -> Result<()> {
    let anon = ctx.connect().await?;
    eq(
        "anonymous whoAmI",
        anon.list_auth_users().await?,
        vec![AuthUser::new("ip", "127.0.0.1")],
    )?;
    let alice = ctx.connect().await?;
    alice.auth("digest", b"alice:secret").await?;
    let mut users = alice.list_auth_users().await?;
    users.sort_by(|a, b| a.scheme().cmp(b.scheme()));
    eq(
        "whoAmI after digest auth",
        users,
        vec![
            AuthUser::new("digest", "alice"),
            AuthUser::new("ip", "127.0.0.1"),
        ],
    )?;
    Ok(())
}
