// expect: 5:16 break
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++) {
    if (i > 3) break;
    B[i] = A[i];
  }
}
