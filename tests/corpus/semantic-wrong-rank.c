// expect: 4:3 subscript
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B[0][1] = A[0];
}
