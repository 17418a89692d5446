package validators

// chain is the validator chain, in the seed's order (the seed's table in
// 001, "The 23 Security Validators"). Each entry names the seed row it
// implements; rows that group several checks (8-10, 14-16, 17-18, 19-21,
// 22-23) are one validator per check here.
//
// Only git_commit can allow; it sits at the seed's position 12, after the
// checks 1-11, and its own conditions cover what checks 13-23 look for.
// Redirections (9-10) are split: sensitive or unknown paths first (not
// overridable by an allow rule), then plain reads and writes below the
// working directory (overridable).
var chain = [...]Validator{
	{Name: "incomplete_commands", Seed: "1 INCOMPLETE_COMMANDS", Fn: validateIncomplete},
	{Name: "jq_system_functions", Seed: "2 JQ_SYSTEM_FUNCTION", Overridable: true, Fn: validateJqFunctions},
	{Name: "jq_file_arguments", Seed: "3 JQ_FILE_ARGUMENTS", Overridable: true, Fn: validateJqFiles},
	{Name: "obfuscated_flags", Seed: "4 OBFUSCATED_FLAGS", Fn: validateObfuscatedFlags},
	{Name: "shell_metacharacters", Seed: "5 SHELL_METACHARACTERS", Fn: validateShellMetacharacters},
	{Name: "dangerous_variables", Seed: "6 DANGEROUS_VARIABLES", Fn: validateDangerousVariables},
	{Name: "newlines", Seed: "7 NEWLINES", Fn: validateNewlines},
	{Name: "command_substitution", Seed: "8 DANGEROUS_PATTERNS (substitution)", Fn: validateSubstitution},
	{Name: "evaluated_strings", Seed: "8 DANGEROUS_PATTERNS (quoted literals bash evaluates as arithmetic: moat's addition)", Fn: validateEvaluatedStrings},
	{Name: "sensitive_redirection", Seed: "9-10 DANGEROUS_PATTERNS (redirection to a sensitive or unknown path)", Fn: validateSensitiveRedirection},
	{Name: "input_redirection", Seed: "9 DANGEROUS_PATTERNS (input redirection)", Overridable: true, Fn: validateInputRedirection},
	{Name: "output_redirection", Seed: "10 DANGEROUS_PATTERNS (output redirection)", Overridable: true, Fn: validateOutputRedirection},
	{Name: "ifs_injection", Seed: "11 IFS_INJECTION", Fn: validateIFS},
	{Name: "git_commit", Seed: "12 GIT_COMMIT_SUBSTITUTION (early allow)", Fn: validateGitCommit},
	{Name: "proc_environ", Seed: "13 PROC_ENVIRON_ACCESS", Fn: validateProcEnviron},
	{Name: "malformed_tokens", Seed: "14 TOKEN (malformed tokens)", Fn: validateMalformedTokens},
	{Name: "backslash_whitespace", Seed: "15 BACKSLASH (escaped whitespace)", Fn: validateBackslashWhitespace},
	{Name: "brace_expansion", Seed: "16 BRACE (brace expansion)", Fn: validateBraceExpansion},
	{Name: "control_characters", Seed: "17 CONTROL (control characters)", Fn: validateControlCharacters},
	{Name: "unicode_whitespace", Seed: "18 UNICODE (non-ASCII whitespace)", Fn: validateUnicodeWhitespace},
	{Name: "mid_word_hash", Seed: "19 HASH (mid-word #)", Fn: validateMidWordHash},
	{Name: "zsh_dangerous", Seed: "20 ZSH (dangerous builtins, =cmd)", Fn: validateZsh},
	{Name: "backslash_operators", Seed: "21 BACKSLASH (escaped operators)", Fn: validateBackslashOperators},
	{Name: "comment_quote_desync", Seed: "22 COMMENT (comment/quote desync)", Fn: validateCommentQuoteDesync},
	{Name: "quoted_newline", Seed: "23 QUOTED (quoted newline)", Fn: validateQuotedNewline},
}
