"""ACLs with digest auth: NoAuth without the credentials, success with them."""

import base64
import hashlib

import pytest
from kazoo.exceptions import InvalidACLError, NoAuthError
from kazoo.security import ACL, Id, OPEN_ACL_UNSAFE, Permissions, make_digest_acl


def digest_id(user, password):
    raw = hashlib.sha1(("%s:%s" % (user, password)).encode()).digest()
    return "%s:%s" % (user, base64.b64encode(raw).decode())


def test_digest_acl_denies_other_clients_and_admits_the_authenticated(make_client, root):
    owner = make_client(auth_data=[("digest", "alice:secret")])
    stranger = make_client()
    path = root + "/private"
    acl = make_digest_acl("alice", "secret", all=True)
    owner.create(path, b"hidden", acl=[acl])
    try:
        with pytest.raises(NoAuthError):
            stranger.get(path)
        with pytest.raises(NoAuthError):
            stranger.set(path, b"x")
        with pytest.raises(NoAuthError):
            stranger.create(path + "/child")
        # Since 3.6, exists on a node whose ACL denies READ is NoAuth too.
        with pytest.raises(NoAuthError):
            stranger.exists(path)
        # Listing the open parent still shows the name.
        assert stranger.get_children(root) == ["private"]
        stranger.add_auth("digest", "alice:secret")
        assert stranger.get(path)[0] == b"hidden"
        assert owner.get(path)[0] == b"hidden"
    finally:
        owner.delete(path)


def test_wrong_password_stays_unauthorised(make_client, root):
    owner = make_client(auth_data=[("digest", "bob:right")])
    other = make_client(auth_data=[("digest", "bob:wrong")])
    path = owner.create(root + "/bob", b"b", acl=[make_digest_acl("bob", "right", all=True)])
    try:
        with pytest.raises(NoAuthError):
            other.get(path)
    finally:
        owner.delete(path)


def test_get_acls_with_admin_returns_the_full_digest_id(make_client, root):
    c = make_client(auth_data=[("digest", "carol:pw")])
    acl = make_digest_acl("carol", "pw", read=True, admin=True)
    path = c.create(root + "/acl", acl=[acl])
    acls, stat = c.get_acls(path)
    assert acls == [ACL(Permissions.READ | Permissions.ADMIN, Id("digest", digest_id("carol", "pw")))]
    assert acl.id.id == digest_id("carol", "pw")
    assert stat.aversion == 0


def test_get_acls_without_admin_masks_the_digest(make_client, root):
    c = make_client(auth_data=[("digest", "carol:pw")])
    path = c.create(root + "/masked", acl=[make_digest_acl("carol", "pw", read=True, write=True)])
    acls, _ = c.get_acls(path)
    assert acls == [ACL(Permissions.READ | Permissions.WRITE, Id("digest", "carol:x"))]


def test_get_acls_needs_read_or_admin(make_client, root):
    owner = make_client(auth_data=[("digest", "carol:pw")])
    stranger = make_client()
    path = owner.create(root + "/noread", acl=[make_digest_acl("carol", "pw", write=True)])
    try:
        with pytest.raises(NoAuthError):
            stranger.get_acls(path)
        with pytest.raises(NoAuthError):
            owner.get_acls(path)
    finally:
        # Nobody can list this node's (absent) children, so remove it here rather than in the fixture.
        owner.delete(path)


def test_set_acls_bumps_aversion_and_takes_effect(make_client, root):
    c = make_client(auth_data=[("digest", "dave:pw")])
    other = make_client()
    path = c.create(root + "/open", b"o")
    assert other.get(path)[0] == b"o"
    stat = c.set_acls(path, [make_digest_acl("dave", "pw", all=True)], version=0)
    assert stat.aversion == 1
    assert stat.version == 0
    try:
        with pytest.raises(NoAuthError):
            other.get(path)
        assert c.get_acls(path)[0] == [ACL(Permissions.ALL, Id("digest", digest_id("dave", "pw")))]
    finally:
        c.set_acls(path, OPEN_ACL_UNSAFE)
        c.delete(path)


def test_read_only_acl_allows_read_but_not_write(make_client, root):
    c = make_client(auth_data=[("digest", "erin:pw")])
    path = c.create(root + "/ro", b"r", acl=[make_digest_acl("erin", "pw", read=True)])
    assert c.get(path)[0] == b"r"
    with pytest.raises(NoAuthError):
        c.set(path, b"w")
    # Deleting a leaf needs DELETE on the parent (open), not on the node itself.
    c.delete(path)
    assert c.exists(path) is None


def test_auth_scheme_acl_without_credentials_is_invalid(client, root):
    with pytest.raises(InvalidACLError):
        client.create(root + "/creator", acl=[ACL(Permissions.ALL, Id("auth", ""))])
