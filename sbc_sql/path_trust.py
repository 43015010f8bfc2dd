"""Whether the server's Python may import from a directory: the check every SQL function of
``sbc-sql install-sql`` makes, inside the server, before it puts its directories on
``sys.path`` and imports sbc-sql from them.

A module another operating-system user can plant in one of those directories would run
inside the PostgreSQL server as the server's operating-system user. So a directory (after
its symbolic links), and every directory above it up to the root, must be owned by root or
by the server's user and writable by no one else: neither group- nor world-writable. The one
exception is a directory above with the sticky bit (as /tmp), where others may add entries
but cannot rename or remove the one on the path, itself owned by root or the server's user.
A symbolic link on the path must be owned by them too. A directory that does not exist is
judged by the nearest one above it, which must not be writable by others at all, sticky or
not: another user could make the missing one.

install-sql writes this module's text into each function's body (sbc_sql.install_sql), so
it holds to the standard library, has no ``from __future__`` import and defines only names
starting with ``sbc_``.
"""

import os
import pwd
import stat


def sbc_unsafe_directory(path: str, owners: "frozenset[int]") -> "str | None":
    """Why the server's Python must not import from ``path``, as an ``Error:`` line's text
    (the directory, its owner or mode, and the fix), or None when it may. ``owners``: the
    user ids that may own it and what is above it (root's and the server's)."""
    for start in (path, os.path.realpath(path)):
        below = False  # whether the entry below the current one on the path exists
        missing = ""  # the highest directory on the path that does not exist, if one does not
        current = start
        while True:
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                st = None
            except OSError as err:
                fix = f"let the server's operating-system user {sbc_user(os.geteuid())} read it"
                return sbc_refusal(path, current, f"cannot be examined ({err.strerror})", fix)
            if st is None:
                missing = current  # the highest missing one so far: what another user could make
            else:
                said = sbc_judged(st, owners, below)
                if said is not None and missing and not below and sbc_judged(st, owners, True) is None:
                    # a sticky directory that would keep the missing one, were it there
                    said = f"does not exist, and '{current}' above it {said}, so another user could make it"
                    fix = f"create '{missing}' owned by {sbc_owners(owners)}, writable by them only"
                    return sbc_refusal(path, missing, said, fix)
                if said is not None:
                    fix = f"let only {sbc_owners(owners)} own '{current}' and write to it (chown, chmod go-w)"
                    return sbc_refusal(path, current, said, fix)
            below = st is not None
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return None


def sbc_judged(st: os.stat_result, owners: "frozenset[int]", below: bool) -> "str | None":
    """What is wrong with one entry on the path, or None. ``below``: whether the entry
    below it on the path exists (a sticky directory keeps others from replacing it)."""
    if st.st_uid not in owners:
        return f"is owned by {sbc_user(st.st_uid)}"
    if stat.S_ISLNK(st.st_mode):
        return None  # a link's own mode means nothing; what it leads to is checked
    if st.st_mode & 0o022 and not (below and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        mode = f"{stat.S_IMODE(st.st_mode):04o}"
        if st.st_mode & stat.S_ISVTX:
            return f"is writable by others (mode {mode}; its sticky bit does not keep them from adding to it)"
        return f"is writable by others (mode {mode})"
    return None


def sbc_refusal(path: str, where: str, said: str, fix: str) -> str:
    """The refusal's line: which directory, what is wrong, why it matters, the fix."""
    place = f"'{where}'" if where == path else f"'{where}', on the path to '{path}',"
    return (
        f"{place} {said}; the server's Python imports sbc-sql from '{path}', and a module "
        "another user planted there would run inside the server as its operating-system user "
        f"{sbc_user(os.geteuid())}: {fix}, or install sbc-sql where only they can write and "
        "run install-sql again with that --python-path"
    )


def sbc_owners(owners: "frozenset[int]") -> str:
    """The users who may own the path, root first."""
    return " or ".join(sbc_user(uid) for uid in sorted(owners))


def sbc_user(uid: int) -> str:
    """An operating-system user by name (its id when it has none)."""
    try:
        return f"'{pwd.getpwuid(uid).pw_name}'"
    except KeyError:
        return f"uid {uid}"


def sbc_path_refusal(paths: "list[str]") -> "str | None":
    """Why the server's Python must not import from the first of ``paths`` it must not, as
    an ``Error:`` line's text, or None when it may import from every one. The SQL function
    raises it as the PostgreSQL error of SQLSTATE 42501 (insufficient_privilege)."""
    owners = frozenset((0, os.geteuid()))
    for path in paths:
        said = sbc_unsafe_directory(path, owners)
        if said is not None:
            return said
    return None
