export declare const router: { push(href: string): void };
