; JavaScript-only tags, after ecmascript.scm (TypeScript wraps heritage in clauses).

(class_heritage
  [
    (identifier) @name.reference.class
    (member_expression property: (property_identifier) @name.reference.class)
  ])
