// expect: 3:29 type
// options: --size N=8
void f(int N, unsigned char A[N]) {
  A[0] = 1;
}
