// The page assets imported as text (`with { type: "text" }`): the bundler inlines them into the executable.

declare module "*.css" {
  const text: string;
  export default text;
}

declare module "*/assets/docs.js" {
  const text: string;
  export default text;
}

declare module "*/assets/console.js" {
  const text: string;
  export default text;
}
