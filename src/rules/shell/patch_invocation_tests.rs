use super::*;

const PATCH: &str = "*** Begin Patch\n*** Add File: foo\n+hi $(id) `id`\n*** End Patch\n";

fn read(command: &str) -> Option<PatchInvocation> {
    patch_invocation(command)
}

#[test]
fn the_forms_codex_intercepts_are_read() {
    for (command, folder) in [
        (format!("apply_patch <<'EOF'\n{PATCH}EOF"), None),
        (format!("apply_patch <<'EOF'\n{PATCH}EOF\n"), None),
        (format!("applypatch <<\"PATCH\"\n{PATCH}PATCH\n"), None),
        (
            format!("cd sub && apply_patch <<'EOF'\n{PATCH}EOF\n"),
            Some("sub"),
        ),
        (
            format!("cd 'a b' && apply_patch <<'EOF'\n{PATCH}EOF\n"),
            Some("a b"),
        ),
    ] {
        let read = read(&command).unwrap_or_else(|| panic!("{command:?}"));
        assert_eq!(read.folder.as_deref(), folder, "{command:?}");
        assert_eq!(read.patch, PATCH, "{command:?}");
    }
}

#[test]
fn anything_more_or_anything_expanded_is_not_a_patch() {
    for command in [
        // The shell would expand the text: Codex reads it as it is.
        format!("apply_patch <<EOF\n{PATCH}EOF\n"),
        format!("apply_patch <<-'EOF'\n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF'\n{PATCH}EOF\necho done"),
        format!("apply_patch <<'EOF' && rm -rf x\n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF'\n{PATCH}EOF\n&"),
        format!("apply_patch x <<'EOF'\n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF' >out\n{PATCH}EOF\n"),
        format!("X=1 apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("! apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF' | cat\n{PATCH}EOF\n"),
        format!("echo hi; apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd a; apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd a || apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd a && cd b && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd $HOME && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd ~ && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd \"$D\" && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd a b && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd -P a && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("'apply_patch' <<'EOF'\n{PATCH}EOF\n"),
        format!("./apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("apply_patch 3<<'EOF'\n{PATCH}EOF\n"),
        "apply_patch".to_owned(),
        "git status".to_owned(),
        // A review: bash ends `<<$'EOF'` at `EOF`, brush-parser at `$EOF`, and the comment
        // kept Codex from reading it as a patch, so bash ran the lines between.
        "apply_patch <<$'EOF' # add notes\nEOF\necho x >> .codex/config.toml\n$EOF\n".to_owned(),
        "# add a file\napply_patch <<$\"EOF\"\nEOF\ntouch x\n$EOF\n".to_owned(),
        "cd . && # go\napply_patch <<$'EOF'\nEOF\ntouch x\n$EOF\n".to_owned(),
        "apply_patch <<$'EOF'\nEOF\ntouch x\n$EOF\n".to_owned(),
        format!("apply_patch <<'EOF' # note\n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF'\n{PATCH}EOF\n# after\n"),
        format!("apply_patch <<'EOF'\nEOF \n{PATCH}EOF\n"),
        format!("apply_patch <<'EOF'\n{PATCH}  $EOF\n{PATCH}EOF\n"),
        format!("apply_patch <<'E-F'\n{PATCH}E-F\n"),
        format!("apply_patch <<'EOF'\r\n{PATCH}EOF\n"),
        format!("apply_patch  <<'EOF'\n{PATCH}EOF\n"),
        format!("cd a  && apply_patch <<'EOF'\n{PATCH}EOF\n"),
        format!("cd +0 && apply_patch <<'EOF'\n{PATCH}EOF\n"),
    ] {
        assert_eq!(read(&command), None, "{command:?}");
    }
}
