#ifndef PAM_QUARANTINE_H
#define PAM_QUARANTINE_H

/*
 * pam_quarantine.so: a PAM session module that denies the mount family of system calls
 * (mount, fsopen, fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr,
 * pivot_root) to every process of a session opened for an account a guardian protects, so the
 * account cannot mount a folder that only it sees (a tmpfs over ~/Downloads inside a user
 * namespace of its own) where the guardian service cannot watch. unshare, clone and chroot stay
 * allowed: Chromium's and Firefox's sandboxes need them.
 *
 * The seccomp filter is installed without no_new_privs while the session's process is still
 * root, so everything the session starts inherits it, setuid programs (fusermount) included.
 * It acts only for the uids listed in the root-owned list (QPAM_DEFAULT_LIST, or list=PATH);
 * it refuses the session of a protected account when the filter cannot be installed or the
 * list cannot be trusted (then an account with a configuration DIR/NAME.toml beside the list
 * counts as protected), and does nothing for everyone else.
 *
 * The module exports only pam_sm_open_session and pam_sm_close_session (security/pam_modules.h).
 */

/** The list of protected uids that `quarantine guardian enable` and `disable` maintain. */
#define QPAM_DEFAULT_LIST "/etc/quarantine/protected-uids"

#endif
