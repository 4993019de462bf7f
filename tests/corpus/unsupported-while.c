// expect: 5:3 while
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  int i = 0;
  while (i < N) {
    B[i] = A[i];
  }
}
