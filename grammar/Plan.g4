// The .plan language. docs/language.md is the readable reference; this file is the
// authority on syntax. Only frontend/Parser*.cpp (ParserAST.cpp's builder) sees the
// parse tree. frontend/DirectParser*.cpp parses the same language by hand, the fast
// path, building the same AST; a change here needs the same change there
// (tests/unit/frontend/DirectParserTest.cpp and tests/e2e/parser-agree.sh compare them).
grammar Plan;

file        : importDecl* topDecl* EOF ;
// The value of a command-line `--set block.key=value`.
singleExpr  : expr EOF ;

importDecl  : 'import' importPath ;
importPath  : name ('.' name)*                                  # dottedImport
            | STRING                                            # fileImport
            ;

topDecl     : modelDecl | layerDecl | namesDecl | configBlock ;

// ---------------------------------------------------------------- models and layers
modelDecl   : 'model' name '{' bodyItem* '}' ;
layerDecl   : 'layer' name '(' (layerParam (',' layerParam)* ','?)? ')' '{' bodyItem* '}' ;
layerParam  : name ':' paramType ('=' expr)? ;
paramType   : tensorType                                        # tensorParamType
            | 'enum' '(' name (',' name)* ')'                   # enumParamType
            | name                                              # scalarParamType   // int, float, bool, dtype
            ;
tensorType  : name? '[' (dimItem (',' dimItem)*)? ']' ;
dimItem     : '...' | expr ;

bodyItem    : letDecl | inputDecl | paramDecl | stmt ;
letDecl     : 'let' letBinding (',' letBinding)* ;
letBinding  : name '=' expr ;
inputDecl   : 'input' name ':' tensorType annotation* ;
// After an initialiser, annotations are the expression's postfix ones (the AST
// builder gives them to the param); a second `annotation*` there would make
// every later statement lookahead of one ambiguous decision: quadratic time.
paramDecl   : 'param' name ':' tensorType ('=' expr | annotation*) ;

// An annotation applies to the call (or parenthesised expression) right before it.
// A repeat's `as name` and annotations are the count expression's postfix ones,
// for the same reason (the AST builder gives them to the repeat).
stmt        : name (',' name)* '=' expr                         # assignStmt
            | 'repeat' expr '{' bodyItem* '}'                   # repeatStmt
            | 'if' expr '{' bodyItem* '}' elseClause?           # ifStmt
            | 'return' expr (',' expr)*                         # returnStmt
            ;
elseClause  : 'else' '{' bodyItem* '}'
            | 'else' stmt
            ;

annotation  : ANNOTATION ('(' (arg (',' arg)*)? ')')? ;

// ---------------------------------------------------------------- expressions
// Precedence, loosest first: or, and, not, comparisons, + -, * / % @, unary -, postfix.
expr        : expr ANNOTATION ('(' (arg (',' arg)*)? ')')?      # annotatedExpr
            | expr 'as' name                                    # namedExpr
            | expr '.' name                                     # memberExpr
            | '-' expr                                          # negExpr
            | expr op=('*' | '/' | '%' | '@') expr              # mulExpr
            | expr op=('+' | '-') expr                          # addExpr
            | expr op=('==' | '!=' | '<' | '<=' | '>' | '>=') expr  # cmpExpr
            | 'not' expr                                        # notExpr
            | expr 'and' expr                                   # andExpr
            | expr 'or' expr                                    # orExpr
            | primary                                           # primaryExpr
            ;
primary     : name '(' (arg (',' arg)* ','?)? ')'               # callExpr
            | QUANTITY                                          # quantityLit
            | NUMBER                                            # numberLit
            | STRING                                            # stringLit
            | ('true' | 'false')                                # boolLit
            | name                                              # nameRef
            | '(' expr ')'                                      # parenExpr
            | '(' expr ',' (expr (',' expr)*)? ','? ')'         # tupleExpr
            | '[' (expr (',' expr)* ','?)? ']'                  # listExpr
            ;
arg         : (name '=')? expr ;

// ---------------------------------------------------------------- name maps
// `names hf_llama { "model.layers.{i}.self_attn.q_proj.weight" = transpose("blocks.{i}.*.wq") ... }`:
// how the tensors of a file of other names (Hugging Face's) are the plan's parameters. A rule is a
// file-name pattern and an expression over a parameter-path pattern; a setting (`config = "llama"`)
// says what else the map carries.
namesDecl   : 'names' name '{' namesItem* '}' ;
namesItem   : STRING '=' expr ','?                              # nameRule
            | setting                                           # namesSetting
            ;

// ---------------------------------------------------------------- train / cluster / parallel
// Every block is a list of settings; `key = value` and `key value` mean the same, so the
// command line's --set block.key=value can override either form.
configBlock : kind=('train' | 'cluster' | 'parallel') '{' setting* '}' ;
setting     : name '=' expr ','?                                # assignSetting
            | name '(' (arg (',' arg)* ','?)? ')' ','?          # argsSetting      // mesh(dp = 2, tp = 4)
            | name expr? '{' setting* '}' ','?                  # nestedSetting    // device { memory = 80 GiB }
            | name expr ','?                                    # wordSetting      // optimizer adamw(lr = 3e-4)
            ;

// ---------------------------------------------------------------- lexer
// Names that are keywords elsewhere stay usable as names where no keyword fits.
name        : IDENT | 'model' | 'layer' | 'train' | 'cluster' | 'parallel' | 'enum'
            | 'input' | 'param' | 'names' | SCHEDULE_1F1B ;

SCHEDULE_1F1B : '1f1b' ;
// A number with a unit is one token, so `s`, `B` or `to` after a number stay names.
QUANTITY    : NUMBER_BODY [ \t]* UNIT ;
fragment UNIT : 'KiB' | 'MiB' | 'GiB' | 'TiB' | 'KB' | 'MB' | 'GB' | 'TB'
              | 'GB/s' | 'TB/s' | 'MB/s' | 'Gb/s' | 'Tb/s' | 'Mb/s' | 'GiB/s'
              | 'TFLOPS' | 'GFLOPS' | 'PFLOPS' | 'ns' | 'us' | 'ms' ;
NUMBER      : NUMBER_BODY ;
fragment NUMBER_BODY : DIGITS ('.' DIGITS?)? EXPONENT? | '.' DIGITS EXPONENT? ;
fragment DIGITS : [0-9] ('_'? [0-9])* ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
STRING      : '"' (~["\\\r\n] | '\\' .)* '"' ;
// `@name` written without a space is an annotation; matmul is `a @ b` (space after @).
ANNOTATION  : '@' [a-zA-Z_] [a-zA-Z_0-9]* ;
IDENT       : [a-zA-Z_] [a-zA-Z_0-9]* ;
LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
// An unterminated comment runs to the end of the file; the builder reports it.
BLOCK_COMMENT : '/*' .*? ('*/' | EOF) -> channel(HIDDEN) ;
WS          : [ \t\r\n]+ -> skip ;
// Anything else becomes one token the parser rejects with a located message.
BAD_CHAR    : . ;
